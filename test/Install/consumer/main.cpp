// Compiles one projection for MI300 and picks a kernel from a bundle, using
// the installed mla-fp8 package (find_package(mla-fp8 CONFIG)).
#include "mla-fp8/AOT/Bundle.h"
#include "mla-fp8/AOT/Compile.h"
#include "mla-fp8/Runtime/Bundle.h"

#include <cstdio>

using namespace mlir::mlafp8;

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s BUNDLE_DIR\n", argv[0]);
    return 2;
  }
  // DeepSeek-R1 TP8 K-up (N = 512, K = 128, B = 16) for gfx942.
  KernelGroupSpec spec;
  spec.projection = "k_up";
  spec.batches = {16};
  spec.tp = {8};
  spec.kernel.chip = "gfx942";
  spec.kernel.n = 512;
  spec.kernel.k = 128;
  spec.kernel.fp8Type = "f8E4M3FNUZ";
  spec.kernel.outType = "bf16";
  spec.maxM = 64;
  auto compiled = compileKernelGroupToCodeObject(spec, /*withIsa=*/true);
  if (!compiled) {
    std::fprintf(stderr, "%s\n", llvm::toString(compiled.takeError()).c_str());
    return 1;
  }
  std::printf("code object: %zu bytes, %zu kernels, mfma: %s\n",
              compiled->codeObject.size(), compiled->kernels.size(),
              compiled->isa.find("v_mfma") != std::string::npos ? "yes" : "no");

  // Every kernel of the model at TP 8 for gfx942, as mla-fp8-aot writes it.
  BundleOptions options;
  options.kernels.model = "deepseek-r1";
  options.kernels.dims = lookupModelPreset("deepseek-r1")->dims;
  options.kernels.tp = {8};
  options.kernels.chips = {"gfx942"};
  options.kernels.maxM = 64;
  options.outputDir = argv[1];
  if (auto written = generateBundle(options); !written) {
    std::fprintf(stderr, "%s\n", llvm::toString(written.takeError()).c_str());
    return 1;
  }

  // At serving time: load the bundle once, then look kernels up per call.
  auto bundle = runtime::loadBundle(argv[1]);
  if (!bundle) {
    std::fprintf(stderr, "%s\n", llvm::toString(bundle.takeError()).c_str());
    return 1;
  }
  const runtime::KernelEntry *kernel =
      bundle->findKernel("gfx942", /*n=*/512, /*k=*/128, /*m=*/7, /*b=*/16);
  if (!kernel)
    return 1;
  std::array<uint64_t, 3> grid = kernel->getGrid(/*m=*/7, /*b=*/16);
  std::printf("M=7: %s, grid %llu x %llu x %llu\n", kernel->symbol.c_str(),
              (unsigned long long)grid[0], (unsigned long long)grid[1],
              (unsigned long long)grid[2]);
  return compiled->isa.find("v_mfma") != std::string::npos ? 0 : 1;
}
