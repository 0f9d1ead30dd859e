//===- EndToEndTest.cpp - the generated kernels, run and checked ----------===//
//
// The project's end-to-end correctness test: mla-fp8-aot's default kernel set
// is generated, loaded as a server would load it, and every kernel is run on
// the gfx9 emulator at M = 1, each M-range edge, edge + 1 and a middle value,
// against the exact reference of SPEC.md. Then the layouts and options a
// server uses: strided X views, (M, B, N) output into a larger tensor,
// per-batch descales, f16 output, a partial last K-group and M = 0.
//
//===----------------------------------------------------------------------===//

#include "mla-fp8/AOT/Bundle.h"
#include "mla-fp8/Reference/Formats.h"
#include "mla-fp8/Reference/PrequantBmm.h"
#include "mla-fp8/Runtime/Bundle.h"
#include "mla-fp8/Runtime/EmulatorLaunch.h"
#include "mla-fp8/Runtime/Verify.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "gtest/gtest.h"

#include <cmath>
#include <map>
#include <optional>
#include <set>

using namespace mlir::mlafp8;
using runtime::KernelEntry;
using runtime::LoadedBundle;
using runtime::VerifyProblem;
using runtime::VerifyResult;

namespace {

/// The launches (B, M) that exercise a kernel's range of rows B * M: its
/// first row count, one past it, the middle and the last (an unbounded range
/// is tried up to `span` past its start). Above 4096 rows only the first two:
/// the work grows with the rows, the coverage not. Each row count is split
/// as B * M with the largest B of 16, 4, 2, 1 that divides it.
std::vector<std::pair<int64_t, int64_t>> launchesFor(const KernelEntry &kernel,
                                                     int64_t span) {
  int64_t lo = kernel.minRows;
  int64_t hi = kernel.maxRows ? kernel.maxRows : lo + span;
  std::set<int64_t> rows = {lo, lo + 1, (lo + hi) / 2, hi};
  std::vector<std::pair<int64_t, int64_t>> result;
  for (int64_t r : rows) {
    if (r < lo || r > hi || (r > 4096 && r > lo + 1))
      continue;
    for (int64_t b : {16, 4, 2, 1})
      if (r % b == 0) {
        result.push_back({b, r / b});
        break;
      }
  }
  return result;
}

/// Generates (once per option set) and loads a bundle.
const LoadedBundle &getBundle(const KernelSetOptions &options,
                              const std::string &name) {
  static std::map<std::string, LoadedBundle> bundles;
  auto it = bundles.find(name);
  if (it != bundles.end())
    return it->second;
  llvm::SmallString<128> dir;
  EXPECT_FALSE(llvm::sys::fs::createUniqueDirectory("mlafp8-e2e", dir));
  llvm::sys::path::append(dir, name);
  BundleOptions bundleOptions;
  bundleOptions.kernels = options;
  bundleOptions.outputDir = std::string(dir);
  llvm::Expected<BundleResult> result = generateBundle(bundleOptions);
  EXPECT_TRUE(static_cast<bool>(result)) << llvm::toString(result.takeError());
  llvm::Expected<LoadedBundle> loaded = runtime::loadBundle(dir);
  EXPECT_TRUE(static_cast<bool>(loaded)) << llvm::toString(loaded.takeError());
  llvm::sys::fs::remove_directories(llvm::sys::path::parent_path(dir));
  return bundles.emplace(name, std::move(*loaded)).first->second;
}

KernelSetOptions defaultOptions() {
  KernelSetOptions options;
  options.dims = lookupModelPreset("deepseek-r1")->dims;
  return options;
}

runtime::EmulatorLauncher &launcher() {
  static runtime::EmulatorLauncher instance;
  return instance;
}

/// Every kernel of the default set, per chip and projection.
class DefaultSet
    : public ::testing::TestWithParam<std::tuple<const char *, const char *>> {
};

TEST_P(DefaultSet, EveryKernelMatchesTheReference) {
  auto [chip, projection] = GetParam();
  const LoadedBundle &bundle = getBundle(defaultOptions(), "default");
  const runtime::LoadedChip *loaded = bundle.findChip(chip);
  ASSERT_NE(loaded, nullptr);
  int kernels = 0;
  for (const KernelEntry &kernel : loaded->kernels) {
    if (kernel.projection != projection)
      continue;
    ++kernels;
    for (auto [b, m] : launchesFor(kernel, /*span=*/640)) {
      ASSERT_TRUE(kernel.serves(m, b)) << kernel.symbol;
      VerifyProblem p;
      p.batch = b;
      p.m = m;
      p.seed = uint64_t(m);
      VerifyResult out = runtime::verifyKernel(launcher(), kernel, p);
      EXPECT_TRUE(out.passed()) << out.error << kernel.symbol << " B=" << b
                                << " M=" << m << ": " << out.message;
      EXPECT_EQ(out.outside, 0) << kernel.symbol << " B=" << b << " M=" << m;
    }
  }
  // The tile table's ranges of rows (gfx942: K-up four, V-up five; gfx950:
  // K-up three, V-up four; all reached by B = 128, M = 1024), for bf16 and
  // for f16 activations.
  bool kUp = std::string(projection) == "k_up";
  bool gfx942 = std::string(chip) == "gfx942";
  EXPECT_EQ(kernels, 2 * (gfx942 ? (kUp ? 4 : 5) : (kUp ? 3 : 4)));
}

INSTANTIATE_TEST_SUITE_P(AOT, DefaultSet,
                         ::testing::Combine(::testing::Values("gfx942",
                                                              "gfx950"),
                                            ::testing::Values("k_up", "v_up")),
                         [](const auto &info) {
                           return std::string(std::get<0>(info.param)) + "_" +
                                  std::get<1>(info.param);
                         });

/// The serving layouts: q_nope read in place from its (M, H, P + R) tensor,
/// and Y written as (M, B, N) into a wider tensor.
TEST(ServingLayouts, StridedXAndTransposedY) {
  const LoadedBundle &bundle = getBundle(defaultOptions(), "default");
  for (const char *chip : {"gfx942", "gfx950"})
    for (auto [n, k] : {std::pair<int64_t, int64_t>{512, 128}, {128, 512}})
      for (int64_t m : {1, 5, 40}) {
        const KernelEntry *kernel = bundle.findKernel(chip, n, k, m, 16);
        ASSERT_NE(kernel, nullptr);
        VerifyProblem p;
        p.batch = 16;
        p.m = m;
        p.seed = 7;
        p.x = runtime::kQNopeLayout;
        p.y = runtime::kWideTokenMajorLayout;
        VerifyResult out = runtime::verifyKernel(launcher(), *kernel, p);
        EXPECT_TRUE(out.passed())
            << out.error << kernel->symbol << ": " << out.message;
        EXPECT_EQ(out.outside, 0) << kernel->symbol;
      }
}

TEST(Options, PerBatchDescaleAndF16Output) {
  KernelSetOptions options = defaultOptions();
  options.chips = {"gfx942", "gfx950"};
  options.maxM = 32;
  options.weightScale = kernel_abi::WeightScaleMode::PerBatch;
  options.outType = "f16";
  const LoadedBundle &bundle = getBundle(options, "per-batch-f16");
  for (const runtime::LoadedChip &chip : bundle.chips)
    for (const KernelEntry &kernel : chip.kernels) {
      ASSERT_EQ(kernel.weightScale, kernel_abi::WeightScaleMode::PerBatch);
      ASSERT_EQ(kernel.outType, "f16");
      // B = 4 at the first M of the range and 3 past it.
      int64_t first = (kernel.minRows + 3) / 4;
      for (int64_t m : {first, first + 3}) {
        VerifyProblem p;
        p.batch = 4;
        p.m = m;
        ASSERT_TRUE(kernel.serves(m, 4)) << kernel.symbol << " M=" << m;
        p.seed = 11;
        VerifyResult out = runtime::verifyKernel(launcher(), kernel, p);
        EXPECT_TRUE(out.passed())
            << out.error << kernel.symbol << ": " << out.message;
      }
    }
}

/// Kernels that add a (B, N) bias, next to those that do not.
TEST(Options, Bias) {
  KernelSetOptions options = defaultOptions();
  options.maxM = 32;
  options.bias = true;
  const LoadedBundle &bundle = getBundle(options, "bias");
  int withBias = 0;
  for (const runtime::LoadedChip &chip : bundle.chips)
    for (const KernelEntry &kernel : chip.kernels) {
      withBias += kernel.hasBias;
      VerifyProblem p;
      p.batch = 3;
      p.m = (kernel.minRows + 2) / 3 + 2;
      ASSERT_TRUE(kernel.serves(p.m, p.batch)) << kernel.symbol;
      p.seed = 13;
      VerifyResult out = runtime::verifyKernel(launcher(), kernel, p);
      EXPECT_TRUE(out.passed())
          << out.error << kernel.symbol << ": " << out.message;
    }
  // M <= 32 at B = 128 (4096 rows): K-up's ranges 1-512, 513-2048 and
  // 2049-8192 on gfx942 (gfx950: 1-2048, 2049-8192), V-up's 1-2048 and
  // 2049-4096 on both, per activation type.
  EXPECT_EQ(withBias, 2 * ((3 + 2) + (2 + 2)));
}

/// K = 200 with groups of 128: the second group holds 72 columns, and its
/// amax and sum cover only those.
TEST(Options, PartialLastGroup) {
  KernelSetOptions options = defaultOptions();
  options.model = "custom";
  options.dims.qkNopeHeadDim = 200;
  options.maxM = 16;
  const LoadedBundle &bundle = getBundle(options, "partial-group");
  for (const char *chip : {"gfx942", "gfx950"}) {
    const KernelEntry *kernel = bundle.findKernel(chip, 512, 200, 9, 2);
    ASSERT_NE(kernel, nullptr);
    VerifyProblem p;
    p.batch = 2;
    p.m = 9;
    p.seed = 5;
    VerifyResult out = runtime::verifyKernel(launcher(), *kernel, p);
    EXPECT_TRUE(out.passed())
        << out.error << kernel->symbol << ": " << out.message;
    EXPECT_EQ(out.outside, 0) << kernel->symbol;
  }
}

/// A NaN or an Inf activation makes its row of Y NaN on both chips, split-K
/// kernels included, as in the reference; it does not leak into other rows.
TEST(Options, NaNAndInfActivations) {
  const LoadedBundle &bundle = getBundle(defaultOptions(), "default");
  for (const char *chip : {"gfx942", "gfx950"})
    for (auto [n, k] : {std::pair<int64_t, int64_t>{512, 128}, {128, 512}}) {
      const KernelEntry *kernel = bundle.findKernel(chip, n, k, 3, 2);
      ASSERT_NE(kernel, nullptr);
      VerifyProblem p;
      p.batch = 2;
      p.m = 3;
      p.specials = true;
      VerifyResult out = runtime::verifyKernel(launcher(), *kernel, p);
      EXPECT_TRUE(out.passed())
          << out.error << kernel->symbol << ": " << out.message;
    }
}

/// M = 0 (and B = 0) launch nothing and write nothing: Y, sized for a real
/// call, keeps every sentinel.
TEST(Options, ZeroTokensWriteNothing) {
  const LoadedBundle &bundle = getBundle(defaultOptions(), "default");
  const KernelEntry *kernel = bundle.findKernel("gfx942", 128, 512, 0, 16);
  ASSERT_NE(kernel, nullptr);
  std::array<uint64_t, 3> grid = kernel->getGrid(/*m=*/0, /*b=*/16);
  EXPECT_EQ(grid[1], 0u);
  std::vector<uint16_t> x(16 * 4 * 512, 0x3f80), y(16 * 4 * 128, 0x7fc1);
  std::vector<uint8_t> w(16 * 128 * 512, 0x38);
  float ws = 1.0f;
  runtime::PrequantBmmCall call;
  call.batch = 16;
  call.x = x.data();
  call.xStrideB = 4 * 512;
  call.xStrideM = 512;
  call.w = w.data();
  call.wScale = &ws;
  call.y = y.data();
  call.yStrideB = 4 * 128;
  call.yStrideM = 128;
  for (auto [batch, m] : {std::pair<int64_t, int64_t>{16, 0}, {0, 4}}) {
    call.batch = batch;
    call.m = m;
    auto stats = launcher().launch(*kernel, call);
    ASSERT_TRUE(static_cast<bool>(stats)) << llvm::toString(stats.takeError());
    EXPECT_EQ(stats->instructions, 0u);
    EXPECT_EQ(stats->workgroups, 0u);
    EXPECT_TRUE(llvm::all_of(y, [](uint16_t v) { return v == 0x7fc1; }));
  }
}

} // namespace

namespace {
/// The check can fail: a per-tensor kernel described as per-batch reads one
/// descale where the reference applies B different ones.
TEST(Verify, CatchesAWrongResult) {
  const LoadedBundle &bundle = getBundle(defaultOptions(), "default");
  const KernelEntry *kernel = bundle.findKernel("gfx942", 512, 128, 4, 3);
  ASSERT_NE(kernel, nullptr);
  KernelEntry mislabeled = *kernel;
  mislabeled.weightScale = kernel_abi::WeightScaleMode::PerBatch;
  VerifyProblem p;
  p.batch = 3;
  p.m = 4;
  VerifyResult out = runtime::verifyKernel(launcher(), mislabeled, p);
  EXPECT_GT(out.failures, 0);
  EXPECT_NE(out.message.find("reference"), std::string::npos) << out.message;
}
} // namespace

namespace {
/// SPEC.md's accumulator is fp32: with |x| near 1e36 some K-up outputs
/// overflow it and the kernel gives Inf where the f64 reference is finite.
/// The reference flags exactly those outputs (one K-group per row, so the
/// order of the sum cannot matter) and the check passes, saying so.
TEST(Verify, Fp32AccumulatorOverflowIsFlaggedNotAMismatch) {
  const LoadedBundle &bundle = getBundle(defaultOptions(), "default");
  for (const char *chip : {"gfx942", "gfx950"}) {
    const KernelEntry *kernel = bundle.findKernel(chip, 512, 128, 4, 2);
    ASSERT_NE(kernel, nullptr);
    VerifyProblem p;
    p.batch = 2;
    p.m = 4;
    p.xScale = 1e36f;
    VerifyResult out = runtime::verifyKernel(launcher(), *kernel, p);
    EXPECT_TRUE(out.passed())
        << out.error << kernel->symbol << ": " << out.message;
    EXPECT_GT(out.accOverflows, 0) << kernel->symbol;
    EXPECT_LT(out.accOverflows, 2 * 4 * 512) << kernel->symbol;
    EXPECT_EQ(out.accOverflowsNonFinite, out.accOverflows) << kernel->symbol;
    EXPECT_NE(out.note.find("overflow the fp32 accumulator"), std::string::npos)
        << out.note;

    // The same, element by element: Inf exactly where the reference flags.
    std::optional<FP8Format> format = parseFP8Format(kernel->fp8Type);
    ASSERT_TRUE(format.has_value());
    int64_t b = 2, m = 4, n = 512, k = 128;
    std::vector<uint16_t> x(b * m * k), y(b * m * n, 0x7fc1);
    std::vector<uint8_t> w(b * n * k);
    // Row r at 1e36 / 4^r: the first rows overflow, the last do not, and
    // the rows between split. Every partial sum is an integer below 2^24, so
    // it is exact in fp32 whatever the kernel's order.
    for (size_t i = 0; i < x.size(); ++i)
      x[i] = floatToBF16((i % 7 == 3 ? -1.0f : 1.0f) *
                         std::ldexp(1e36f, -2 * int(i / k)) *
                         (1.0f + 0.03f * float(i % 11)));
    for (size_t i = 0; i < w.size(); ++i)
      w[i] = encodeFP8(float(int(i % 13) - 4) * 16.0f, *format);
    float ws = 1e-3f;
    PrequantBmmArgs args;
    args.B = b;
    args.M = m;
    args.N = n;
    args.K = k;
    args.groupSize = kernel->groupSize;
    args.format = *format;
    args.x = x.data();
    args.xStrideB = m * k;
    args.xStrideM = k;
    args.w = w.data();
    args.weightDescale = &ws;
    std::vector<double> ref;
    std::vector<uint8_t> flagged;
    std::string error;
    ASSERT_TRUE(referencePrequantBmmF64(args, ref, &error, &flagged)) << error;
    runtime::PrequantBmmCall call;
    call.batch = b;
    call.m = m;
    call.x = x.data();
    call.xStrideB = m * k;
    call.xStrideM = k;
    call.w = w.data();
    call.wScale = &ws;
    call.y = y.data();
    call.yStrideB = m * n;
    call.yStrideM = n;
    auto stats = launcher().launch(*kernel, call);
    ASSERT_TRUE(static_cast<bool>(stats)) << llvm::toString(stats.takeError());
    int64_t count = 0;
    for (size_t i = 0; i < y.size(); ++i) {
      EXPECT_TRUE(std::isfinite(ref[i]));
      EXPECT_EQ(std::isinf(bf16ToFloat(y[i])), flagged[i] != 0)
          << kernel->symbol << " output " << i << ": reference " << ref[i];
      count += flagged[i];
    }
    EXPECT_GT(count, 0);
    EXPECT_LT(count, int64_t(y.size()));
  }
}
} // namespace
