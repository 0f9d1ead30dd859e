//===- Verify.cpp - check a bundle kernel against the reference -----------===//

#include "mla-fp8/Runtime/Verify.h"

#include "mla-fp8/Reference/Formats.h"
#include "mla-fp8/Reference/PrequantBmm.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>
#include <random>

using namespace mlir::mlafp8;
using namespace mlir::mlafp8::runtime;

/// Spacing of the output type's values at the magnitude of `v`.
static double outputUlp(double v, OutType type) {
  int mantissa = type == OutType::BF16 ? 7 : 10;
  int minExp = type == OutType::BF16 ? -126 : -14;
  v = std::fabs(v);
  int e = v > 0 ? std::max(std::ilogb(v), minExp) : minExp;
  return std::ldexp(1.0, e - mantissa);
}

VerifyResult runtime::verifyKernel(EmulatorLauncher &launcher,
                                   const KernelEntry &kernel,
                                   const VerifyProblem &p) {
  VerifyResult result;
  std::optional<FP8Format> format = parseFP8Format(kernel.fp8Type);
  if (!format || (kernel.outType != "bf16" && kernel.outType != "f16") ||
      kernel.inType != "bf16") {
    result.error = "kernel '" + kernel.symbol + "' has types this check " +
                   "does not generate (" + kernel.inType + " -> " +
                   kernel.fp8Type + " -> " + kernel.outType + ")";
    return result;
  }
  OutType outType = kernel.outType == "bf16" ? OutType::BF16 : OutType::F16;
  bool perBatch = kernel.weightScale == kernel_abi::WeightScaleMode::PerBatch;
  int64_t b = p.batch, m = p.m, n = kernel.n, k = kernel.k;

  std::mt19937_64 rng(p.seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  int64_t xRow = p.stridedX ? k + 64 : k;
  int64_t xStrideB = p.stridedX ? xRow : m * k;
  int64_t xStrideM = p.stridedX ? b * xRow : k;
  std::vector<uint16_t> x(std::max<int64_t>(b * m * xRow, 1));
  for (uint16_t &v : x)
    v = floatToBF16(normal(rng) * p.xScale);
  if (p.specials && m > 0) {
    x[0] = 0x7fc0; // NaN at (0, 0, 0)
    if (m > 1)
      x[xStrideM + k / 2] = 0x7f80; // +Inf at (0, 1, k / 2)
  }
  std::vector<float> wf(b * n * k);
  for (float &v : wf)
    v = normal(rng) * 0.05f;
  std::vector<uint8_t> w(wf.size());
  std::vector<float> ws(perBatch ? b : 1);
  if (perBatch)
    quantizeWeightsPerBatch(wf.data(), b, n * k, *format, w.data(), ws.data());
  else
    ws[0] = quantizeWeights(wf.data(), int64_t(wf.size()), *format, w.data());

  int64_t yRow = p.transposedY ? n + 32 : n;
  int64_t yStrideB = p.transposedY ? yRow : m * n;
  int64_t yStrideM = p.transposedY ? b * yRow : n;
  // A NaN pattern no kernel produces: unwritten or stray elements show.
  const uint16_t sentinel = 0x7fc1;
  std::vector<uint16_t> y(std::max<int64_t>(b * m * yRow, 1), sentinel);
  std::vector<uint16_t> bias;
  if (kernel.hasBias) {
    bias.resize(b * n);
    for (uint16_t &v : bias)
      v = outType == OutType::BF16 ? floatToBF16(normal(rng))
                                   : floatToF16(normal(rng));
  }

  PrequantBmmArgs args;
  args.B = b;
  args.M = m;
  args.N = n;
  args.K = k;
  args.groupSize = kernel.groupSize;
  args.format = *format;
  args.inputType = OutType::BF16;
  args.x = x.data();
  args.xStrideB = xStrideB;
  args.xStrideM = xStrideM;
  args.w = w.data();
  args.weightDescale = ws.data();
  args.perBatchDescale = perBatch;
  args.outType = outType;
  args.bias = kernel.hasBias ? bias.data() : nullptr;
  std::vector<double> ref;
  std::vector<uint8_t> accOverflow;
  std::string error;
  if (!referencePrequantBmmF64(args, ref, &error, &accOverflow)) {
    result.error = "reference: " + error;
    return result;
  }

  PrequantBmmCall call;
  call.batch = b;
  call.m = m;
  call.x = x.data();
  call.xStrideB = xStrideB;
  call.xStrideM = xStrideM;
  call.w = w.data();
  call.wScale = ws.data();
  call.bias = kernel.hasBias ? bias.data() : nullptr;
  call.y = y.data();
  call.yStrideB = yStrideB;
  call.yStrideM = yStrideM;
  llvm::Expected<emu::ExecStats> ran = launcher.launch(kernel, call, p.threads);
  if (!ran) {
    result.error = llvm::toString(ran.takeError());
    return result;
  }
  result.stats = *ran;

  double maxRef = 0;
  for (double r : ref)
    if (!std::isnan(r))
      maxRef = std::max(maxRef, std::fabs(r));
  std::vector<bool> inside(y.size(), false);
  for (int64_t bi = 0; bi < b; ++bi)
    for (int64_t mi = 0; mi < m; ++mi)
      for (int64_t ni = 0; ni < n; ++ni) {
        int64_t at = bi * yStrideB + mi * yStrideM + ni;
        inside[at] = true;
        int64_t index = (bi * m + mi) * n + ni;
        double expected = ref[index];
        double got = outTypeToFloat(y[at], outType);
        // The reference itself rounds values past the output type's range to
        // Inf: compare with that, not with the unrounded value.
        double rounded =
            outTypeToFloat(roundToOutType(expected, outType), outType);
        bool bad;
        if (accOverflow[index]) {
          ++result.accOverflows;
          if (!std::isfinite(got))
            ++result.accOverflowsNonFinite;
        }
        if (accOverflow[index] && !std::isfinite(got)) {
          bad = false;
        } else if (std::isnan(expected) || std::isnan(got)) {
          bad = std::isnan(expected) != std::isnan(got);
        } else if (std::isinf(rounded) || std::isinf(got)) {
          bad = got != rounded;
        } else {
          double err = std::fabs(got - expected);
          double ulp = outputUlp(expected, outType);
          result.maxAbsError = std::max(result.maxAbsError, err);
          result.maxUlp = std::max(result.maxUlp, err / ulp);
          bad = !(err <= ulp + 0x1p-20 * maxRef);
        }
        if (bad && result.failures++ == 0)
          result.message =
              llvm::formatv("{0}: Y[{1},{2},{3}] = {4}, reference {5}",
                            kernel.symbol, bi, mi, ni, got, expected);
      }
  if (result.accOverflows)
    result.note = llvm::formatv(
        "{0}: {1} of {2} outputs overflow the fp32 accumulator (SPEC.md): "
        "Inf allowed where the f64 reference is finite; the kernel gave {3} "
        "of them as Inf or NaN",
        kernel.symbol, result.accOverflows, b * m * n,
        result.accOverflowsNonFinite);
  for (size_t i = 0; i < y.size(); ++i)
    if (!inside[i] && y[i] != sentinel)
      ++result.outside;
  if (result.outside && result.message.empty())
    result.message = kernel.symbol + ": wrote outside Y's view";
  return result;
}
