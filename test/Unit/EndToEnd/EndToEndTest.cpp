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

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "gtest/gtest.h"

#include <cmath>
#include <map>
#include <random>
#include <set>

using namespace mlir::mlafp8;
using runtime::KernelEntry;
using runtime::LoadedBundle;

namespace {

/// Spacing of the output type's values at the magnitude of `v`.
double outputUlp(double v, OutType type) {
  int mantissa = type == OutType::BF16 ? 7 : 10;
  int minExp = type == OutType::BF16 ? -126 : -14;
  v = std::fabs(v);
  int e = v > 0 ? std::max(std::ilogb(v), minExp) : minExp;
  return std::ldexp(1.0, e - mantissa);
}

/// A problem's inputs, laid out as the call describes.
struct Problem {
  int64_t batch, m, n, k;
  OutType outType = OutType::BF16;
  FP8Format format;
  bool perBatch = false;
  /// X as the K-up view of q_nope: (M, B, K + 64) storage, read as (B, M, K).
  bool stridedX = false;
  /// Y as (M, B, N) inside a wider (M, B, N + 32) tensor.
  bool transposedY = false;
};

struct Outcome {
  int64_t failures = 0, outside = 0;
  double maxUlp = 0;
  std::string first;
};

/// Runs `kernel` on `problem` with random inputs and compares with the
/// reference; also checks that nothing outside Y's view changed.
Outcome runAndCompare(runtime::EmulatorLauncher &launcher,
                      const KernelEntry &kernel, const Problem &p,
                      uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  int64_t b = p.batch, m = p.m, n = p.n, k = p.k;

  int64_t xRow = p.stridedX ? k + 64 : k;
  int64_t xStrideB = p.stridedX ? xRow : m * k;
  int64_t xStrideM = p.stridedX ? b * xRow : k;
  std::vector<uint16_t> x(std::max<int64_t>(b * m * xRow, 1));
  for (uint16_t &v : x)
    v = floatToBF16(normal(rng));

  std::vector<float> wf(b * n * k);
  for (float &v : wf)
    v = normal(rng) * 0.05f;
  std::vector<uint8_t> w(wf.size());
  std::vector<float> ws(p.perBatch ? b : 1);
  if (p.perBatch)
    quantizeWeightsPerBatch(wf.data(), b, n * k, p.format, w.data(), ws.data());
  else
    ws[0] = quantizeWeights(wf.data(), int64_t(wf.size()), p.format, w.data());

  int64_t yRow = p.transposedY ? n + 32 : n;
  int64_t yStrideB = p.transposedY ? yRow : m * n;
  int64_t yStrideM = p.transposedY ? b * yRow : n;
  const uint16_t sentinel = 0x7fc1;
  std::vector<uint16_t> y(std::max<int64_t>(b * m * yRow, 1), sentinel);

  PrequantBmmArgs args;
  args.B = b;
  args.M = m;
  args.N = n;
  args.K = k;
  args.format = p.format;
  args.inputType = OutType::BF16;
  args.x = x.data();
  args.xStrideB = xStrideB;
  args.xStrideM = xStrideM;
  args.w = w.data();
  args.weightDescale = ws.data();
  args.perBatchDescale = p.perBatch;
  args.outType = p.outType;
  std::vector<double> ref;
  std::string error;
  EXPECT_TRUE(referencePrequantBmmF64(args, ref, &error)) << error;

  runtime::PrequantBmmCall call;
  call.batch = b;
  call.m = m;
  call.x = x.data();
  call.xStrideB = xStrideB;
  call.xStrideM = xStrideM;
  call.w = w.data();
  call.wScale = ws.data();
  call.y = y.data();
  call.yStrideB = yStrideB;
  call.yStrideM = yStrideM;
  llvm::Expected<uint64_t> ran = launcher.launch(kernel, call, /*threads=*/0);
  Outcome out;
  if (!ran) {
    out.failures = 1;
    out.first = llvm::toString(ran.takeError());
    return out;
  }

  double maxRef = 0;
  for (double r : ref)
    maxRef = std::max(maxRef, std::fabs(r));
  std::set<int64_t> inside;
  for (int64_t bi = 0; bi < b; ++bi)
    for (int64_t mi = 0; mi < m; ++mi)
      for (int64_t ni = 0; ni < n; ++ni) {
        int64_t at = bi * yStrideB + mi * yStrideM + ni;
        inside.insert(at);
        double expected = ref[(bi * m + mi) * n + ni];
        double got = outTypeToFloat(y[at], p.outType);
        double ulp = outputUlp(expected, p.outType);
        // One output ulp plus fp32 accumulation noise (SPEC.md "Accuracy").
        double tolerance = ulp + 0x1p-20 * maxRef;
        out.maxUlp = std::max(out.maxUlp, std::fabs(got - expected) / ulp);
        if (!(std::fabs(got - expected) <= tolerance) && out.failures++ == 0)
          out.first = llvm::formatv("Y[{0},{1},{2}] = {3}, reference {4}", bi,
                                    mi, ni, got, expected);
      }
  for (int64_t i = 0; i < int64_t(y.size()); ++i)
    if (!inside.count(i) && y[i] != sentinel)
      ++out.outside;
  return out;
}

/// The M values that exercise a kernel's range: its edges, one past them and
/// the middle; an unbounded range is tried up to `limit`.
std::vector<int64_t> mValuesFor(const KernelEntry &kernel, int64_t limit) {
  int64_t lo = kernel.minM;
  int64_t hi = kernel.maxM ? kernel.maxM : limit;
  std::set<int64_t> ms = {lo, lo + 1, (lo + hi) / 2, hi};
  if (lo == 1)
    ms.insert(1);
  std::vector<int64_t> result;
  for (int64_t m : ms)
    if (m >= lo && m <= hi)
      result.push_back(m);
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

FP8Format formatOf(const KernelEntry &kernel) {
  return *parseFP8Format(kernel.fp8Type);
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
    // Large M runs with one head: the work grows with M, the coverage not.
    for (int64_t m : mValuesFor(kernel, /*limit=*/640)) {
      Problem p{m > 128 ? 1 : 2, m, kernel.n, kernel.k};
      p.format = formatOf(kernel);
      Outcome out = runAndCompare(launcher(), kernel, p, /*seed=*/m);
      EXPECT_EQ(out.failures, 0)
          << kernel.symbol << " M=" << m << ": " << out.first;
      EXPECT_EQ(out.outside, 0) << kernel.symbol << " M=" << m;
    }
  }
  EXPECT_EQ(kernels, 7);
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
        const KernelEntry *kernel = bundle.findKernel(chip, n, k, m);
        ASSERT_NE(kernel, nullptr);
        Problem p{16, m, n, k};
        p.format = formatOf(*kernel);
        p.stridedX = true;
        p.transposedY = true;
        Outcome out = runAndCompare(launcher(), *kernel, p, 7);
        EXPECT_EQ(out.failures, 0) << kernel->symbol << ": " << out.first;
        EXPECT_EQ(out.outside, 0) << kernel->symbol;
      }
}

TEST(Options, PerBatchDescaleAndF16Output) {
  KernelSetOptions options = defaultOptions();
  options.chips = {"gfx942", "gfx950"};
  options.maxM = 32;
  options.weightScale = WeightScale::PerBatch;
  options.outType = "f16";
  const LoadedBundle &bundle = getBundle(options, "per-batch-f16");
  for (const runtime::LoadedChip &chip : bundle.chips)
    for (const KernelEntry &kernel : chip.kernels) {
      ASSERT_EQ(kernel.wScale, "per_batch");
      ASSERT_EQ(kernel.outType, "f16");
      for (int64_t m : {kernel.minM, kernel.minM + 3}) {
        Problem p{4, m, kernel.n, kernel.k};
        p.format = formatOf(kernel);
        p.perBatch = true;
        p.outType = OutType::F16;
        Outcome out = runAndCompare(launcher(), kernel, p, 11);
        EXPECT_EQ(out.failures, 0) << kernel.symbol << ": " << out.first;
      }
    }
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
    const KernelEntry *kernel = bundle.findKernel(chip, 512, 200, 9);
    ASSERT_NE(kernel, nullptr);
    Problem p{2, 9, 512, 200};
    p.format = formatOf(*kernel);
    Outcome out = runAndCompare(launcher(), *kernel, p, 5);
    EXPECT_EQ(out.failures, 0) << kernel->symbol << ": " << out.first;
    EXPECT_EQ(out.outside, 0) << kernel->symbol;
  }
}

TEST(Options, ZeroTokensWriteNothing) {
  const LoadedBundle &bundle = getBundle(defaultOptions(), "default");
  const KernelEntry *kernel = bundle.findKernel("gfx942", 512, 128, 0);
  ASSERT_NE(kernel, nullptr);
  Problem p{16, 0, 512, 128};
  p.format = formatOf(*kernel);
  Outcome out = runAndCompare(launcher(), *kernel, p, 3);
  EXPECT_EQ(out.failures, 0) << out.first;
  EXPECT_EQ(out.outside, 0);
}

} // namespace
