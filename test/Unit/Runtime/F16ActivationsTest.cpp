//===- F16ActivationsTest.cpp - kernels for f16 activations ---------------===//
//
// Models served in float16 pass f16 X. The default set holds a kernel for it
// next to each bf16 one (mla-fp8-aot --in-type); EndToEndTest runs every
// kernel of the set at each M edge. This test covers what is particular to
// f16 X on both chips: the symbols and the lookup by in_type, NaN and Inf
// rows (f16 has its own bit patterns), f16's small range, and the serving
// layouts.
//
//===----------------------------------------------------------------------===//

#include "mla-fp8/AOT/Bundle.h"
#include "mla-fp8/Runtime/Bundle.h"
#include "mla-fp8/Runtime/EmulatorLaunch.h"
#include "mla-fp8/Runtime/Verify.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "gtest/gtest.h"

#include <tuple>

using namespace mlir::mlafp8;
using runtime::KernelEntry;
using runtime::LoadedBundle;
using runtime::VerifyProblem;
using runtime::VerifyResult;

namespace {

/// The default set of DeepSeek-R1 up to M = 64 on both chips, loaded as a
/// server loads it. The build tree's cache compiles it once for every test
/// process.
const LoadedBundle &getBundle() {
  static const LoadedBundle bundle = [] {
    llvm::SmallString<128> dir;
    EXPECT_FALSE(llvm::sys::fs::createUniqueDirectory("mlafp8-f16", dir));
    llvm::sys::path::append(dir, "bundle");
    BundleOptions options;
    options.kernels.dims = lookupModelPreset("deepseek-r1")->dims;
    options.kernels.maxM = 64;
    options.outputDir = std::string(dir);
    options.cacheDir = MLAFP8_TEST_BUNDLE_CACHE;
    llvm::Expected<BundleResult> result = generateBundle(options);
    EXPECT_TRUE(bool(result)) << llvm::toString(result.takeError());
    llvm::Expected<LoadedBundle> loaded = runtime::loadBundle(dir);
    EXPECT_TRUE(bool(loaded)) << llvm::toString(loaded.takeError());
    llvm::sys::fs::remove_directories(llvm::sys::path::parent_path(dir));
    return loaded ? std::move(*loaded) : LoadedBundle();
  }();
  return bundle;
}

const KernelEntry *findF16Kernel(const char *chip, int64_t n, int64_t k,
                                 int64_t m, int64_t batch) {
  runtime::KernelQuery query;
  query.chip = chip;
  query.n = n;
  query.k = k;
  query.m = m;
  query.batch = batch;
  query.inType = "f16";
  return getBundle().findKernel(query);
}

runtime::EmulatorLauncher &launcher() {
  static runtime::EmulatorLauncher instance;
  return instance;
}

const std::pair<int64_t, int64_t> kShapes[] = {{512, 128}, {128, 512}};

/// Runs `kernel` on `problem` and expects the reference's Y, written inside
/// Y's view only.
void expectMatchesReference(const KernelEntry &kernel,
                            const VerifyProblem &problem) {
  VerifyResult out = runtime::verifyKernel(launcher(), kernel, problem);
  EXPECT_TRUE(out.passed()) << out.error << kernel.symbol << " M=" << problem.m
                            << ": " << out.message;
  EXPECT_EQ(out.outside, 0) << kernel.symbol;
}

/// Every bf16 kernel has an f16 twin with the same range and tile, whose
/// symbol says `_xf16`; a lookup picks by in_type.
TEST(F16Activations, OneKernelPerInTypeAndRange) {
  for (const runtime::LoadedChip &chip : getBundle().chips) {
    int bf16 = 0, f16 = 0;
    for (const KernelEntry &kernel : chip.kernels) {
      bool isF16 = kernel.inType == "f16";
      (isF16 ? f16 : bf16) += 1;
      EXPECT_EQ(kernel.symbol.find("_xf16_") != std::string::npos, isF16)
          << kernel.symbol;
      runtime::KernelQuery query;
      static_cast<kernel_abi::KernelDescription &>(query) = kernel;
      query.inType = isF16 ? "bf16" : "f16";
      query.m = kernel.minRows;
      query.batch = 1;
      const KernelEntry *twin = getBundle().findKernel(query);
      ASSERT_NE(twin, nullptr) << kernel.symbol;
      EXPECT_EQ(twin->minRows, kernel.minRows);
      EXPECT_EQ(twin->maxRows, kernel.maxRows);
      EXPECT_EQ(std::make_tuple(twin->blockM, twin->blockN, twin->waves,
                                twin->splitK),
                std::make_tuple(kernel.blockM, kernel.blockN, kernel.waves,
                                kernel.splitK))
          << kernel.symbol;
      EXPECT_NE(twin->symbol, kernel.symbol);
    }
    EXPECT_EQ(bf16, f16) << chip.chip;
    EXPECT_GT(f16, 0) << chip.chip;
  }
}

/// A NaN or an Inf in f16 (0x7e00 / 0x7c00 patterns) makes its row of Y NaN
/// on both chips, split-K kernels (V-up at M <= 16) included.
TEST(F16Activations, NaNAndInfRows) {
  for (const char *chip : {"gfx942", "gfx950"})
    for (auto [n, k] : kShapes)
      for (int64_t m : {3, 40}) {
        const KernelEntry *kernel = findF16Kernel(chip, n, k, m, 2);
        ASSERT_NE(kernel, nullptr) << chip << " " << n << " " << k;
        VerifyProblem p;
        p.batch = 2;
        p.m = m;
        p.specials = true;
        expectMatchesReference(*kernel, p);
      }
}

/// Rows of very different magnitudes (2^-3 .. 2^3, each its own scale) and
/// zero groups (the amax floor), in the serving layouts: X read as the K-up
/// view of q_nope, Y written as (M, B, N) into a wider tensor.
TEST(F16Activations, RowScalesAndServingLayouts) {
  for (const char *chip : {"gfx942", "gfx950"})
    for (auto [n, k] : kShapes)
      for (int64_t m : {1, 17, 33}) {
        const KernelEntry *kernel = findF16Kernel(chip, n, k, m, 16);
        ASSERT_NE(kernel, nullptr);
        VerifyProblem p;
        p.batch = 16;
        p.m = m;
        p.seed = 3;
        p.varyRowScales = true;
        p.zeroGroups = true;
        p.x = runtime::kQNopeLayout;
        p.y = runtime::kWideTokenMajorLayout;
        expectMatchesReference(*kernel, p);
      }
}

/// f16 X near its largest finite value (65504): the kernels quantize it
/// like the reference, without overflow in the scale.
TEST(F16Activations, LargeValues) {
  for (const char *chip : {"gfx942", "gfx950"}) {
    const KernelEntry *kernel = findF16Kernel(chip, 128, 512, 9, 2);
    ASSERT_NE(kernel, nullptr);
    VerifyProblem p;
    p.batch = 2;
    p.m = 9;
    p.xScale = 12000.0f;
    expectMatchesReference(*kernel, p);
  }
}

/// The check is not vacuous for f16 kernels: an f16 kernel run on bf16 bits
/// of the same values disagrees with the reference.
TEST(F16Activations, CheckCatchesTheWrongInputType) {
  const KernelEntry *kernel = findF16Kernel("gfx942", 512, 128, 5, 2);
  ASSERT_NE(kernel, nullptr);
  KernelEntry mislabelled = *kernel;
  mislabelled.inType = "bf16";
  VerifyProblem p;
  p.batch = 2;
  p.m = 5;
  VerifyResult out = runtime::verifyKernel(launcher(), mislabelled, p);
  EXPECT_TRUE(out.error.empty()) << out.error;
  EXPECT_GT(out.failures, 0);
}

} // namespace
