// Serves one call from a bundle on the emulator through the embedding API's
// MLIR-free half (mla-fp8::EmbeddingRuntime): the program links no MLIR.
#include "mla-fp8/Embedding/Runtime.h"
#include "mla-fp8/Reference/Formats.h"

#include <cstdio>
#include <string>
#include <vector>

using namespace mlir::mlafp8;

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s BUNDLE_DIR\n", argv[0]);
    return 2;
  }
  std::string error;
  auto bundle = embedding::loadBundle(argv[1], error);
  if (!bundle) {
    std::fprintf(stderr, "%s\n", error.c_str());
    return 1;
  }
  // DeepSeek-R1 TP8 K-up at M = 3: Y = X W^T with every element 1.
  const int64_t b = 16, m = 3, n = 512, k = 128;
  const runtime::KernelEntry *kernel =
      bundle->findKernel("gfx942", n, k, m, b, "bf16", "per_tensor");
  if (!kernel)
    return 1;
  std::vector<uint16_t> x(b * m * k, floatToBF16(1.0f)), y(b * m * n);
  std::vector<uint8_t> w(b * n * k, encodeFP8(1.0f, FP8Format::E4M3FNUZ));
  float wScale = 1.0f;
  runtime::PrequantBmmCall call;
  call.batch = b;
  call.m = m;
  call.x = x.data();
  call.xStrideB = m * k;
  call.xStrideM = k;
  call.w = w.data();
  call.wScale = &wScale;
  call.y = y.data();
  call.yStrideB = m * n;
  call.yStrideM = n;

  embedding::BundleEmulator emulator(bundle);
  uint64_t instructions = 0;
  if (!emulator.launch(*kernel, call, /*threads=*/0, instructions, error)) {
    std::fprintf(stderr, "%s\n", error.c_str());
    return 1;
  }
  for (uint16_t bits : y)
    if (bf16ToFloat(bits) != float(k))
      return 1;
  std::printf("M=%lld: %s, %llu instructions, Y = %g everywhere\n",
              (long long)m, kernel->symbol.c_str(),
              (unsigned long long)instructions, double(k));
  return 0;
}
