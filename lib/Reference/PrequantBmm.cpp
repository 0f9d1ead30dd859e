//===- PrequantBmm.cpp - Exact reference of the quantized bmm -------------===//
//
// Written for obviousness, not speed: one (b, m) row at a time, quantized in
// f32 exactly as SPEC.md spells it, accumulated in f64.
//
//===----------------------------------------------------------------------===//

#include "mla-fp8/Reference/PrequantBmm.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

namespace mlir::mlafp8 {

/// SPEC.md's clamp; NaN passes through (the comparisons are false).
static float clampToMax(float value, float fmax) {
  if (value < -fmax)
    return -fmax;
  if (value > fmax)
    return fmax;
  return value;
}

/// max(max|x|, 1e-10) in f32; NaN never wins a comparison, so it is skipped.
static float getAmax(const float *x, int64_t count) {
  float amax = 0.0f;
  for (int64_t i = 0; i < count; ++i) {
    float magnitude = std::fabs(x[i]);
    if (magnitude > amax)
      amax = magnitude;
  }
  return amax > kAmaxFloor ? amax : kAmaxFloor;
}

/// The 256 decoded values of `format`, as f64 so products are exact.
static std::array<double, 256> getDecodeTable(FP8Format format) {
  std::array<double, 256> table;
  for (int bits = 0; bits < 256; ++bits)
    table[bits] = decodeFP8(static_cast<uint8_t>(bits), format);
  return table;
}

float quantizeWeights(const float *w, int64_t count, FP8Format format,
                      uint8_t *out) {
  return quantizeWeightsWithAmax(w, count, getAmax(w, count), format, out);
}

float quantizeWeightsWithAmax(const float *w, int64_t count, float amax,
                              FP8Format format, uint8_t *out) {
  float fmax = getFP8Max(format);
  amax = amax > kAmaxFloor ? amax : kAmaxFloor;
  float scale = fmax / amax;
  for (int64_t i = 0; i < count; ++i)
    out[i] = encodeFP8(clampToMax(w[i] * scale, fmax), format);
  return amax / fmax;
}

void quantizeWeightsPerBatch(const float *w, int64_t batch,
                             int64_t perBatchCount, FP8Format format,
                             uint8_t *out, float *descales) {
  for (int64_t b = 0; b < batch; ++b)
    descales[b] = quantizeWeights(w + b * perBatchCount, perBatchCount, format,
                                  out + b * perBatchCount);
}

float reencodeE4M3FNToFNUZ(const uint8_t *in, int64_t count, uint8_t *out) {
  for (int64_t i = 0; i < count; ++i) {
    uint8_t bits = in[i];
    if ((bits & 0x7F) == 0x7F)
      out[i] = 0x80;
    else if (bits == 0x80)
      out[i] = 0x00;
    else
      out[i] = bits;
  }
  return kE4M3FNToFNUZDescaleFactor;
}

float quantizeGroup(const float *x, int64_t count, FP8Format format,
                    uint8_t *q) {
  float fmax = getFP8Max(format);
  float amax = getAmax(x, count);
  float scale = amax * (1.0f / fmax);
  float inverse = 1.0f / scale;
  for (int64_t i = 0; i < count; ++i)
    q[i] = encodeFP8(clampToMax(x[i] * inverse, fmax), format);
  return scale;
}

int64_t getNumGroups(int64_t k, int64_t groupSize) {
  return (k + groupSize - 1) / groupSize;
}

void quantizeActivationRow(const uint16_t *x, OutType inputType, int64_t k,
                           int64_t groupSize, FP8Format format, uint8_t *q,
                           float *scales) {
  std::vector<float> row(k);
  for (int64_t i = 0; i < k; ++i)
    row[i] = outTypeToFloat(x[i], inputType);
  for (int64_t g = 0, begin = 0; begin < k; ++g, begin += groupSize) {
    int64_t size = k - begin < groupSize ? k - begin : groupSize;
    scales[g] = quantizeGroup(row.data() + begin, size, format, q + begin);
  }
}

bool doRowsOverlap(int64_t strideB, int64_t extentB, int64_t strideM,
                   int64_t extentM, int64_t n) {
  strideB = strideB < 0 ? -strideB : strideB;
  strideM = strideM < 0 ? -strideM : strideM;
  if (extentB <= 1 && extentM <= 1)
    return false;
  if (extentB <= 1)
    return strideM < n;
  if (extentM <= 1)
    return strideB < n;
  int64_t innerStride = strideM, innerExtent = extentM, outerStride = strideB;
  if (strideB < strideM) {
    innerStride = strideB;
    innerExtent = extentB;
    outerStride = strideM;
  }
  return innerStride < n || outerStride < (innerExtent - 1) * innerStride + n;
}

std::string validatePrequantBmmArgs(const PrequantBmmArgs &args,
                                    bool requireOutput) {
  if (args.B < 0 || args.M < 0 || args.N < 0)
    return "dimensions B, M and N must be non-negative";
  if (args.K <= 0)
    return "K must be positive";
  if (args.groupSize <= 0 || (args.groupSize & (args.groupSize - 1)) != 0)
    return "group size must be a positive power of two";
  if (args.B == 0 || args.M == 0 || args.N == 0)
    return "";
  if (!args.x)
    return "x must not be null";
  if (!args.w)
    return "w must not be null";
  if (!args.weightDescale)
    return "weight descale must not be null";
  if (!requireOutput)
    return "";
  if (!args.y)
    return "y must not be null";
  if (doRowsOverlap(args.yStrideB, args.B, args.yStrideM, args.M, args.N))
    return "y strides make distinct rows overlap";
  return "";
}

bool getAccumulatorOverflow(const float *terms, int64_t numGroups,
                            float descale) {
  // The smallest magnitude that rounds to Inf in f32: FLT_MAX + half an ulp.
  constexpr double kOverflow = 0x1.ffffffp127;
  double sum = 0.0;
  for (int64_t g = 0; g < numGroups; ++g) {
    if (std::isinf(terms[g]))
      return true;
    sum += std::fabs(static_cast<double>(terms[g]));
  }
  return sum >= kOverflow ||
         sum * std::fabs(static_cast<double>(descale)) >= kOverflow;
}

/// Computes the N unrounded outputs of row (b, m), and with `overflow` their
/// accumulator-overflow flags. `q`, `scales` and `terms` are scratch of K
/// bytes and getNumGroups(K) floats each.
static void computeRow(const PrequantBmmArgs &args,
                       const std::array<double, 256> &decoded, int64_t b,
                       int64_t m, uint8_t *q, float *scales, float *terms,
                       double *out, uint8_t *overflow) {
  const uint16_t *xRow = args.x + b * args.xStrideB + m * args.xStrideM;
  quantizeActivationRow(xRow, args.inputType, args.K, args.groupSize,
                        args.format, q, scales);
  int64_t numGroups = getNumGroups(args.K, args.groupSize);
  bool finiteScales = true;
  for (int64_t g = 0; g < numGroups; ++g)
    finiteScales = finiteScales && std::isfinite(scales[g]);
  float descaleF = args.weightDescale[args.perBatchDescale ? b : 0];
  double descale = descaleF;
  for (int64_t n = 0; n < args.N; ++n) {
    const uint8_t *wRow = args.w + (b * args.N + n) * args.K;
    double acc = 0.0;
    for (int64_t g = 0, begin = 0; begin < args.K;
         ++g, begin += args.groupSize) {
      int64_t end =
          begin + args.groupSize < args.K ? begin + args.groupSize : args.K;
      double partial = 0.0;
      for (int64_t k = begin; k < end; ++k)
        partial += decoded[q[k]] * decoded[wRow[k]];
      acc += static_cast<double>(scales[g]) * partial;
      // SPEC.md's fp32 term s * partial: the f64 product of two floats is
      // exact, so the cast rounds it once, as the f32 multiply does.
      terms[g] = static_cast<float>(static_cast<double>(scales[g]) *
                                    static_cast<float>(partial));
    }
    double value = acc * descale;
    if (args.bias)
      value += outTypeToFloat(args.bias[b * args.N + n], args.outType);
    out[n] = value;
    if (overflow)
      overflow[n] = finiteScales && std::isfinite(descaleF) &&
                    getAccumulatorOverflow(terms, numGroups, descaleF);
  }
}

/// Runs computeRow over every (b, m) and hands each row (and its overflow
/// flags, when `withOverflow`) to `sink`.
template <typename Sink>
static void forEachRow(const PrequantBmmArgs &args, bool withOverflow,
                       Sink sink) {
  std::array<double, 256> decoded = getDecodeTable(args.format);
  std::vector<uint8_t> q(args.K);
  int64_t numGroups = getNumGroups(args.K, args.groupSize);
  std::vector<float> scales(numGroups), terms(numGroups);
  std::vector<double> row(args.N);
  std::vector<uint8_t> overflow(withOverflow ? args.N : 0);
  for (int64_t b = 0; b < args.B; ++b) {
    for (int64_t m = 0; m < args.M; ++m) {
      computeRow(args, decoded, b, m, q.data(), scales.data(), terms.data(),
                 row.data(), withOverflow ? overflow.data() : nullptr);
      sink(b, m, row.data(), overflow.data());
    }
  }
}

bool referencePrequantBmm(const PrequantBmmArgs &args, std::string *error,
                          uint8_t *accOverflow) {
  std::string message = validatePrequantBmmArgs(args);
  if (!message.empty()) {
    if (error)
      *error = message;
    return false;
  }
  forEachRow(
      args, accOverflow != nullptr,
      [&](int64_t b, int64_t m, const double *row, const uint8_t *overflow) {
        uint16_t *yRow = args.y + b * args.yStrideB + m * args.yStrideM;
        for (int64_t n = 0; n < args.N; ++n)
          yRow[n] = roundToOutType(row[n], args.outType);
        if (accOverflow)
          std::copy(overflow, overflow + args.N,
                    accOverflow + (b * args.M + m) * args.N);
      });
  return true;
}

bool referencePrequantBmmF64(const PrequantBmmArgs &args,
                             std::vector<double> &out, std::string *error,
                             std::vector<uint8_t> *accOverflow) {
  std::string message = validatePrequantBmmArgs(args, /*requireOutput=*/false);
  if (!message.empty()) {
    if (error)
      *error = message;
    return false;
  }
  out.assign(args.B * args.M * args.N, 0.0);
  if (accOverflow)
    accOverflow->assign(out.size(), 0);
  forEachRow(
      args, accOverflow != nullptr,
      [&](int64_t b, int64_t m, const double *row, const uint8_t *overflow) {
        int64_t at = (b * args.M + m) * args.N;
        std::copy(row, row + args.N, out.begin() + at);
        if (accOverflow)
          std::copy(overflow, overflow + args.N, accOverflow->begin() + at);
      });
  return true;
}

int64_t getUlpDistance(uint16_t a, uint16_t b, OutType type) {
  (void)type; // bf16 and f16 are both sign-magnitude: the order is the same.
  auto ordered = [](uint16_t bits) -> int64_t {
    int64_t magnitude = bits & 0x7FFF;
    return (bits & 0x8000) ? -magnitude : magnitude;
  };
  int64_t distance = ordered(a) - ordered(b);
  return distance < 0 ? -distance : distance;
}

/// Folds one element's absolute error and ulp distance into `stats`.
static void accumulate(OutputErrorStats &stats, int64_t index, double actual,
                       double expected, double ulps) {
  double absError = actual == expected ? 0.0 : std::fabs(actual - expected);
  double relError = absError == 0.0   ? 0.0
                    : expected == 0.0 ? std::numeric_limits<double>::infinity()
                                      : absError / std::fabs(expected);
  if (absError > stats.maxAbsError)
    stats.maxAbsError = absError;
  if (relError > stats.maxRelError)
    stats.maxRelError = relError;
  if (stats.worstIndex < 0 || ulps > stats.maxUlpDistance) {
    stats.maxUlpDistance = ulps;
    stats.worstIndex = index;
  }
}

OutputErrorStats compareOutputs(const uint16_t *actual,
                                const uint16_t *expected, int64_t count,
                                OutType type) {
  OutputErrorStats stats;
  stats.count = count;
  for (int64_t i = 0; i < count; ++i) {
    double a = outTypeToFloat(actual[i], type);
    double e = outTypeToFloat(expected[i], type);
    if (std::isnan(a) || std::isnan(e)) {
      if (std::isnan(a) != std::isnan(e))
        ++stats.nanMismatches;
      continue;
    }
    accumulate(
        stats, i, a, e,
        static_cast<double>(getUlpDistance(actual[i], expected[i], type)));
  }
  return stats;
}

double getOutputUlp(double value, OutType type) {
  int manBits = type == OutType::BF16 ? 7 : 10;
  int minExp = type == OutType::BF16 ? -126 : -14;
  int exp = minExp;
  if (value != 0.0) {
    std::frexp(value, &exp);
    // frexp gives a mantissa in [0.5, 1): the binade is exp - 1.
    exp = exp - 1 > minExp ? exp - 1 : minExp;
  }
  return std::ldexp(1.0, exp - manBits);
}

OutputErrorStats compareOutputsToF64(const uint16_t *actual,
                                     const double *expected, int64_t count,
                                     OutType type) {
  OutputErrorStats stats;
  stats.count = count;
  for (int64_t i = 0; i < count; ++i) {
    double a = outTypeToFloat(actual[i], type);
    double e = expected[i];
    if (std::isnan(a) || std::isnan(e)) {
      if (std::isnan(a) != std::isnan(e))
        ++stats.nanMismatches;
      continue;
    }
    double ulps;
    if (a == e)
      ulps = 0.0;
    else if (std::isinf(e))
      ulps = std::numeric_limits<double>::infinity();
    else
      ulps = std::fabs(a - e) / getOutputUlp(e, type);
    accumulate(stats, i, a, e, ulps);
  }
  return stats;
}

} // namespace mlir::mlafp8
