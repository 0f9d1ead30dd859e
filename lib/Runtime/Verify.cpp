//===- Verify.cpp - check a kernel against the reference ------------------===//

#include "mla-fp8/Runtime/Verify.h"

#include "mla-fp8/Reference/Formats.h"
#include "mla-fp8/Reference/PrequantBmm.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>
#include <random>

using namespace mlir::mlafp8;
using namespace mlir::mlafp8::runtime;

static std::optional<OutType> parseHalfType(llvm::StringRef name) {
  if (name == "bf16")
    return OutType::BF16;
  if (name == "f16")
    return OutType::F16;
  return std::nullopt;
}

namespace {
/// A (B, M, cols) operand in its storage: element (b, m, c) at
/// b * strideB + m * strideM + c.
struct Operand {
  int64_t strideB = 0, strideM = 0;
  std::vector<uint16_t> storage;

  Operand(int64_t b, int64_t m, int64_t cols, VerifyLayout layout,
          uint16_t fill) {
    int64_t row = cols + layout.rowPadding;
    strideB = layout.tokenMajor ? row : m * row;
    strideM = layout.tokenMajor ? b * row : row;
    storage.assign(std::max<int64_t>(b * m * row, 1), fill);
  }
  uint16_t &at(int64_t b, int64_t m, int64_t c) {
    return storage[b * strideB + m * strideM + c];
  }
};
} // namespace

/// Compares the launch's Y with the reference element by element, and the
/// storage outside Y's view with the sentinel it was filled with.
static void compare(const KernelEntry &kernel, const VerifyProblem &p,
                    OutType outType, Operand &y, uint16_t sentinel,
                    const std::vector<double> &ref,
                    const std::vector<uint8_t> &accOverflow,
                    VerifyResult &result) {
  int64_t b = p.batch, m = p.m, n = kernel.n;
  double maxRef = 0;
  for (double r : ref)
    if (!std::isnan(r))
      maxRef = std::max(maxRef, std::fabs(r));
  std::vector<bool> inside(y.storage.size(), false);
  for (int64_t bi = 0; bi < b; ++bi)
    for (int64_t mi = 0; mi < m; ++mi)
      for (int64_t ni = 0; ni < n; ++ni) {
        uint16_t bits = y.at(bi, mi, ni);
        inside[&y.at(bi, mi, ni) - y.storage.data()] = true;
        int64_t index = (bi * m + mi) * n + ni;
        double expected = ref[index];
        if (bits == sentinel) {
          if (result.unwritten++ == 0 && result.message.empty())
            result.message = llvm::formatv("{0}: Y[{1},{2},{3}] never written",
                                           kernel.symbol, bi, mi, ni);
          continue;
        }
        double got = outTypeToFloat(bits, outType);
        // The reference itself rounds values past the output type's range to
        // Inf: compare with that, not with the unrounded value.
        double rounded =
            outTypeToFloat(roundToOutType(expected, outType), outType);
        if (accOverflow[index]) {
          ++result.accOverflows;
          if (!std::isfinite(got))
            ++result.accOverflowsNonFinite;
        }
        bool bad;
        if (accOverflow[index] && !std::isfinite(got)) {
          bad = false;
        } else if (std::isnan(expected) || std::isnan(got)) {
          bad = std::isnan(expected) != std::isnan(got);
        } else if (std::isinf(rounded) || std::isinf(got)) {
          bad = got != rounded;
        } else {
          double err = std::fabs(got - expected);
          double ulp = getOutputUlp(expected, outType);
          result.maxAbsError = std::max(result.maxAbsError, err);
          result.maxUlp = std::max(result.maxUlp, err / ulp);
          bad = !(err <= ulp + 0x1p-20 * maxRef);
        }
        if (bad && result.failures++ == 0 && result.message.empty())
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
  for (size_t i = 0; i < y.storage.size(); ++i)
    if (!inside[i] && y.storage[i] != sentinel)
      ++result.outside;
  if (result.outside && result.message.empty())
    result.message = kernel.symbol + ": wrote outside Y's view";
}

VerifyResult runtime::verifyPrequantBmm(const KernelEntry &kernel,
                                        const VerifyProblem &p,
                                        VerifyLaunch launch) {
  VerifyResult result;
  std::optional<FP8Format> format = parseFP8Format(kernel.fp8Type);
  std::optional<OutType> inType = parseHalfType(kernel.inType);
  std::optional<OutType> outType = parseHalfType(kernel.outType);
  if (!format || !inType || !outType) {
    result.error = "kernel '" + kernel.symbol + "' has types this check " +
                   "does not generate (" + kernel.inType + " -> " +
                   kernel.fp8Type + " -> " + kernel.outType + ")";
    return result;
  }
  if (p.batch < 0 || p.m < 0 || kernel.n < 1 || kernel.k < 1 ||
      kernel.groupSize < 1) {
    result.error = llvm::formatv("invalid problem B = {0}, M = {1} for N = "
                                 "{2}, K = {3}",
                                 p.batch, p.m, kernel.n, kernel.k);
    return result;
  }
  bool perBatch = kernel.weightScale == kernel_abi::WeightScaleMode::PerBatch;
  int64_t b = p.batch, m = p.m, n = kernel.n, k = kernel.k;

  std::mt19937_64 rng(p.seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  // A run that is not compared (the timing model's) repeats a pool of random
  // values: what it measures does not depend on them, and drawing a normal
  // value per element would take longer than the run.
  constexpr int64_t kPoolSize = 4093;
  std::vector<float> pool;
  if (!p.compare)
    for (int64_t i = 0; i < kPoolSize; ++i)
      pool.push_back(normal(rng));
  int64_t drawn = 0;
  auto draw = [&] {
    return pool.empty() ? normal(rng) : pool[drawn++ % kPoolSize];
  };
  // The pool's values in the input type, when every row has the same scale.
  std::vector<uint16_t> roundedPool;
  if (!pool.empty() && !p.varyRowScales && !p.zeroGroups)
    for (float v : pool)
      roundedPool.push_back(roundToOutType(double(v) * p.xScale, *inType));
  Operand x(b, m, k, p.x, /*fill=*/0);
  for (int64_t bi = 0; bi < b; ++bi)
    for (int64_t mi = 0; mi < m; ++mi) {
      float scale = p.xScale;
      if (p.varyRowScales)
        scale *= std::ldexp(1.0f, int((bi + mi) % 7) - 3);
      if (!roundedPool.empty()) {
        for (int64_t ki = 0; ki < k; ++ki)
          x.at(bi, mi, ki) = roundedPool[drawn++ % kPoolSize];
        continue;
      }
      for (int64_t ki = 0; ki < k; ++ki) {
        double value = draw() * scale;
        if (p.zeroGroups && (bi + mi + ki / kernel.groupSize) % 9 == 4)
          value = 0;
        x.at(bi, mi, ki) = roundToOutType(value, *inType);
      }
    }
  if (p.specials && m > 0 && b > 0) {
    x.at(0, 0, 0) = 0x7fc0; // NaN
    if (m > 1)
      x.at(0, 1, k / 2) = *inType == OutType::BF16 ? 0x7f80 : 0x7c00; // +Inf
  }
  // The weights, drawn twice from the same state: once for their amax, once
  // to quantize them a chunk at a time. The bits are quantizeWeights' of
  // the whole tensor, without holding it in f32 (4 bytes an element, which
  // made W the largest allocation of a large-B emulation).
  std::vector<uint8_t> w(b * n * k);
  std::vector<float> ws(perBatch ? std::max<int64_t>(b, 1) : 1);
  {
    int64_t perBatchCount = n * k;
    std::vector<float> amax(perBatch ? std::max<int64_t>(b, 1) : 1, 0.0f);
    std::mt19937_64 savedRng = rng;
    std::normal_distribution<float> savedNormal = normal;
    int64_t savedDrawn = drawn;
    for (int64_t bi = 0; bi < b; ++bi) {
      float &a = amax[perBatch ? bi : 0];
      for (int64_t i = 0; i < perBatchCount; ++i)
        a = std::max(a, std::fabs(draw() * 0.05f));
    }
    rng = savedRng;
    normal = savedNormal;
    drawn = savedDrawn;
    constexpr int64_t kChunk = int64_t(1) << 16;
    std::vector<float> chunk(std::min(kChunk, std::max<int64_t>(
                                                  perBatchCount, 1)));
    for (int64_t bi = 0; bi < b; ++bi)
      for (int64_t start = 0; start < perBatchCount; start += kChunk) {
        int64_t count = std::min(kChunk, perBatchCount - start);
        for (int64_t i = 0; i < count; ++i)
          chunk[i] = draw() * 0.05f;
        float descale = quantizeWeightsWithAmax(
            chunk.data(), count, amax[perBatch ? bi : 0], *format,
            w.data() + bi * perBatchCount + start);
        ws[perBatch ? bi : 0] = descale;
      }
    if (!perBatch && (b == 0 || perBatchCount == 0))
      ws[0] = quantizeWeightsWithAmax(nullptr, 0, 0.0f, *format, nullptr);
  }
  std::vector<uint16_t> bias;
  if (kernel.hasBias) {
    bias.resize(b * n);
    for (uint16_t &v : bias)
      v = roundToOutType(normal(rng), *outType);
  }
  // A NaN pattern no kernel produces: unwritten or stray elements show.
  const uint16_t sentinel = 0x7fc1;
  Operand y(b, m, n, p.y, sentinel);

  PrequantBmmArgs args;
  args.B = b;
  args.M = m;
  args.N = n;
  args.K = k;
  args.groupSize = kernel.groupSize;
  args.format = *format;
  args.inputType = *inType;
  args.x = x.storage.data();
  args.xStrideB = x.strideB;
  args.xStrideM = x.strideM;
  args.w = w.data();
  args.weightDescale = ws.data();
  args.perBatchDescale = perBatch;
  args.outType = *outType;
  args.bias = kernel.hasBias ? bias.data() : nullptr;
  std::vector<double> ref;
  std::vector<uint8_t> accOverflow;
  std::string error;
  if (p.compare && !referencePrequantBmmF64(args, ref, &error, &accOverflow)) {
    result.error = "reference: " + error;
    return result;
  }

  PrequantBmmCall call;
  call.batch = b;
  call.m = m;
  call.x = x.storage.data();
  call.xStrideB = x.strideB;
  call.xStrideM = x.strideM;
  call.w = w.data();
  call.wScale = ws.data();
  call.bias = kernel.hasBias ? bias.data() : nullptr;
  call.y = y.storage.data();
  call.yStrideB = y.strideB;
  call.yStrideM = y.strideM;
  llvm::Expected<emu::ExecStats> ran = launch(call, p.threads);
  ++result.launches;
  if (!ran) {
    result.error = llvm::toString(ran.takeError());
    return result;
  }
  result.stats = *ran;
  // Y of the first launch, for the repeated ones to be compared with.
  std::vector<uint16_t> first;
  if (!p.repeatThreads.empty())
    first = y.storage;
  for (unsigned threads : p.repeatThreads) {
    std::fill(y.storage.begin(), y.storage.end(), sentinel);
    llvm::Expected<emu::ExecStats> again = launch(call, threads);
    ++result.launches;
    if (!again) {
      result.error = llvm::toString(again.takeError());
      return result;
    }
    if (y.storage != first && result.unstableRuns++ == 0)
      result.message = llvm::formatv("{0}: Y with {1} threads differs from Y "
                                     "with {2}",
                                     kernel.symbol, threads, p.threads);
  }
  if (p.compare)
    compare(kernel, p, *outType, y, sentinel, ref, accOverflow, result);
  return result;
}

VerifyResult runtime::verifyKernel(EmulatorLauncher &launcher,
                                   const KernelEntry &kernel,
                                   const VerifyProblem &problem) {
  return verifyPrequantBmm(kernel, problem,
                           [&](const PrequantBmmCall &call, unsigned threads) {
                             return launcher.launch(kernel, call, threads);
                           });
}
