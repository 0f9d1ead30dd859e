//===- WeightsAndErrorsTest.cpp - Weights, error metrics, overflow --------===//
//
// The reference's weight quantization and re-encoding, the error metrics the
// reference check reports, and the fp32 accumulator-overflow flag.
//
//===----------------------------------------------------------------------===//

#include "mla-fp8/Reference/PrequantBmm.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

using namespace mlir::mlafp8;

namespace {

uint16_t bf16(double value) { return doubleToBF16(value); }

//===----------------------------------------------------------------------===//
// Weights
//===----------------------------------------------------------------------===//

TEST(WeightQuantizationTest, PerTensorScaleAndValues) {
  for (FP8Format format : {FP8Format::E4M3FNUZ, FP8Format::E4M3FN,
                           FP8Format::E5M2FNUZ, FP8Format::E5M2}) {
    SCOPED_TRACE(getFP8FormatName(format));
    float fmax = getFP8Max(format);
    // amax 3: w * (FMAX / 3), in f32, then RNE.
    const float w[5] = {3.0f, -3.0f, 1.0f, 0.01f, -0.0f};
    uint8_t q[5];
    float descale = quantizeWeights(w, 5, format, q);
    EXPECT_EQ(descale, 3.0f / fmax);
    EXPECT_EQ(decodeFP8(q[0], format), fmax);
    EXPECT_EQ(decodeFP8(q[1], format), -fmax);
    float scale = fmax / 3.0f;
    for (int i = 0; i < 5; ++i)
      EXPECT_EQ(int(q[i]), int(encodeFP8(w[i] * scale, format))) << i;
    // Dequantized values are within half an fp8 ulp (relative 2^-(M+1)).
    double tolerance = std::ldexp(1.0, -(getFP8MantissaBits(format) + 1));
    for (int i = 0; i < 4; ++i)
      EXPECT_NEAR(decodeFP8(q[i], format) * descale, w[i],
                  std::fabs(w[i]) * tolerance * 1.0001)
          << i;
  }
  // An all-zero tensor uses the floor and quantizes to zeros.
  const float zeros[3] = {0.0f, 0.0f, 0.0f};
  uint8_t q[3];
  EXPECT_EQ(quantizeWeights(zeros, 3, FP8Format::E4M3FNUZ, q), 1e-10f / 240.0f);
  for (uint8_t byte : q)
    EXPECT_EQ(int(byte), 0);
}

TEST(WeightQuantizationTest, PerBatchScales) {
  // Batch 0 amax 2, batch 1 amax 0.5: each maps its own amax to FMAX.
  const float w[6] = {2.0f, 1.0f, -0.5f, 0.5f, 0.25f, -0.125f};
  uint8_t q[6];
  float descales[2];
  quantizeWeightsPerBatch(w, 2, 3, FP8Format::E4M3FN, q, descales);
  EXPECT_EQ(descales[0], 2.0f / 448.0f);
  EXPECT_EQ(descales[1], 0.5f / 448.0f);
  EXPECT_EQ(int(q[0]), 0x7E);
  EXPECT_EQ(int(q[3]), 0x7E);
  EXPECT_EQ(decodeFP8(q[1], FP8Format::E4M3FN), 224.0f);
  EXPECT_EQ(decodeFP8(q[5], FP8Format::E4M3FN), -112.0f);
  float single = quantizeWeights(w, 6, FP8Format::E4M3FN, q);
  EXPECT_EQ(single, descales[0]);
  EXPECT_EQ(decodeFP8(q[3], FP8Format::E4M3FN), 112.0f);
}

TEST(WeightQuantizationTest, ReencodeOCPToFNUZ) {
  std::vector<uint8_t> in(256), out(256);
  for (int i = 0; i < 256; ++i)
    in[i] = static_cast<uint8_t>(i);
  float factor = reencodeE4M3FNToFNUZ(in.data(), 256, out.data());
  EXPECT_EQ(factor, 2.0f);
  EXPECT_EQ(kE4M3FNToFNUZDescaleFactor, 2.0f);
  for (int i = 0; i < 256; ++i) {
    float ocp = decodeFP8(in[i], FP8Format::E4M3FN);
    float fnuz = decodeFP8(out[i], FP8Format::E4M3FNUZ);
    if (std::isnan(ocp)) {
      EXPECT_EQ(int(out[i]), 0x80) << i; // both OCP NaNs -> the FNUZ NaN
      continue;
    }
    EXPECT_FALSE(std::isnan(fnuz)) << i;
    EXPECT_EQ(fnuz * factor, ocp) << i;
  }
  EXPECT_EQ(int(out[0x80]), 0x00); // -0 -> +0: 0x80 is NaN in FNUZ
  EXPECT_EQ(int(out[0x7F]), 0x80);
  EXPECT_EQ(int(out[0xFF]), 0x80);
  EXPECT_EQ(int(out[0x7E]), 0x7E); // 448 -> 224, with the descale doubled
  for (int i = 0; i < 256; ++i)
    EXPECT_NE(int(out[i]), 0x7F) << i; // FNUZ 240 is never produced
}

TEST(WeightQuantizationTest, ReencodedCheckpointDequantizesIdentically) {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 0.02f);
  std::vector<float> w(4096);
  for (float &value : w)
    value = normal(rng);
  std::vector<uint8_t> ocp(w.size()), fnuz(w.size());
  float descale =
      quantizeWeights(w.data(), w.size(), FP8Format::E4M3FN, ocp.data());
  float newDescale =
      descale * reencodeE4M3FNToFNUZ(ocp.data(), ocp.size(), fnuz.data());
  for (size_t i = 0; i < w.size(); ++i)
    ASSERT_EQ(decodeFP8(fnuz[i], FP8Format::E4M3FNUZ) * newDescale,
              decodeFP8(ocp[i], FP8Format::E4M3FN) * descale)
        << i;
}

//===----------------------------------------------------------------------===//
// Error metrics
//===----------------------------------------------------------------------===//

TEST(ErrorMetricsTest, CompareOutputs) {
  // 1.0 vs next bf16 (1 + 2^-7), -0 vs +0, and denormals across zero.
  const uint16_t actual[4] = {0x3F81, 0x8000, 0x0001, 0x4000};
  const uint16_t expected[4] = {0x3F80, 0x0000, 0x8001, 0x4000};
  OutputErrorStats stats = compareOutputs(actual, expected, 4, OutType::BF16);
  EXPECT_EQ(stats.count, 4);
  EXPECT_EQ(stats.maxAbsError, 0x1p-7);
  EXPECT_EQ(stats.maxUlpDistance, 2.0); // 0x0001 and 0x8001 are 2 apart
  EXPECT_EQ(stats.worstIndex, 2);
  EXPECT_EQ(stats.maxRelError, 2.0);
  EXPECT_EQ(stats.nanMismatches, 0);
  EXPECT_EQ(getUlpDistance(0x8000, 0x0000, OutType::F16), 0);
  EXPECT_EQ(getUlpDistance(0x3C00, 0x3BFF, OutType::F16), 1);
  EXPECT_EQ(getUlpDistance(0x7BFF, 0x7C00, OutType::F16), 1);

  // Both NaN: not a mismatch; NaN against 1.0: one.
  const uint16_t nanActual[2] = {0x7FC0, 0x7FC1};
  const uint16_t nanExpected[2] = {0x7FC0, 0x3F80};
  stats = compareOutputs(nanActual, nanExpected, 2, OutType::BF16);
  EXPECT_EQ(stats.nanMismatches, 1);

  // Zero expected, non-zero actual: infinite relative error.
  const uint16_t one = 0x3C00, zero = 0x0000;
  stats = compareOutputs(&one, &zero, 1, OutType::F16);
  EXPECT_TRUE(std::isinf(stats.maxRelError));
}

TEST(ErrorMetricsTest, CompareOutputsToF64) {
  // bf16 1.0 against 1 + 2^-8: half a bf16 ulp (2^-7 on [1, 2)).
  const uint16_t actual[3] = {0x3F80, 0x3C00, 0x0001};
  double expected[3] = {1.0 + 0x1p-8, 0.0, 0.0};
  OutputErrorStats stats =
      compareOutputsToF64(actual, expected, 1, OutType::BF16);
  EXPECT_EQ(stats.maxUlpDistance, 0.5);
  EXPECT_EQ(stats.maxAbsError, 0x1p-8);
  // f16 1.0 against 1 + 3 * 2^-10: three f16 ulps.
  expected[1] = 1.0 + 3 * 0x1p-10;
  stats = compareOutputsToF64(actual + 1, expected + 1, 1, OutType::F16);
  EXPECT_EQ(stats.maxUlpDistance, 3.0);
  // Near zero the ulp is the smallest denormal: f16 2^-24.
  stats = compareOutputsToF64(actual + 2, expected + 2, 1, OutType::F16);
  EXPECT_EQ(stats.maxUlpDistance, 1.0);
}

TEST(ErrorMetricsTest, OutputUlp) {
  EXPECT_EQ(getOutputUlp(1.0, OutType::BF16), 0x1p-7);
  EXPECT_EQ(getOutputUlp(-3.0, OutType::F16), 0x1p-9);
  EXPECT_EQ(getOutputUlp(0.0, OutType::F16), 0x1p-24);
  EXPECT_EQ(getOutputUlp(0x1p-130, OutType::BF16), 0x1p-133);
}

//===----------------------------------------------------------------------===//
// fp32 accumulator range
//===----------------------------------------------------------------------===//

TEST(AccumulatorOverflowTest, Terms) {
  const float big = 2e38f, inf = std::numeric_limits<float>::infinity();
  const float one[] = {big};
  EXPECT_FALSE(getAccumulatorOverflow(one, 1, 1.0f));
  // The final multiply by the descale can overflow too.
  EXPECT_TRUE(getAccumulatorOverflow(one, 1, 2.0f));
  const float two[] = {big, big};
  EXPECT_TRUE(getAccumulatorOverflow(two, 2, 1e-3f));
  // Mixed signs: the order of the sum decides, so the flag is raised.
  const float mixed[] = {big, -big, big};
  EXPECT_TRUE(getAccumulatorOverflow(mixed, 3, 1e-3f));
  const float overflowed[] = {1.0f, inf};
  EXPECT_TRUE(getAccumulatorOverflow(overflowed, 2, 1e-3f));
  // FLT_MAX itself is finite; the next representable step rounds to Inf.
  const float max[] = {std::numeric_limits<float>::max()};
  EXPECT_FALSE(getAccumulatorOverflow(max, 1, 1.0f));
}

/// K = 128, one group per row, every x and w at FMAX: the fp32 term
/// s * partial = amax / 240 * 128 * 240 * 240 overflows for amax = 1e36
/// (3.1e40) but not for 1e33 (3.1e37); ws = 1e-3 keeps both f64 results
/// finite. Only the first row is flagged; a NaN row is not.
TEST(AccumulatorOverflowTest, ReferenceFlagsOverflowingOutputs) {
  const int64_t k = 128;
  std::vector<uint16_t> x(3 * k);
  for (int64_t i = 0; i < k; ++i) {
    x[i] = bf16(1e36);
    x[k + i] = bf16(1e33);
    x[2 * k + i] = bf16(1e36);
  }
  x[2 * k] = 0x7fc0; // NaN: the row is NaN, not an accumulator overflow.
  std::vector<uint8_t> w(2 * k, 0x7F); // 240, FNUZ's FMAX
  float ws = 1e-3f;
  PrequantBmmArgs args;
  args.B = 1;
  args.M = 3;
  args.N = 2;
  args.K = k;
  args.format = FP8Format::E4M3FNUZ;
  args.x = x.data();
  args.xStrideB = 3 * k;
  args.xStrideM = k;
  args.w = w.data();
  args.weightDescale = &ws;
  std::vector<double> ref;
  std::vector<uint8_t> overflow;
  std::string error;
  ASSERT_TRUE(referencePrequantBmmF64(args, ref, &error, &overflow)) << error;
  EXPECT_EQ(overflow, (std::vector<uint8_t>{1, 1, 0, 0, 0, 0}));
  EXPECT_TRUE(std::isfinite(ref[0]));
  EXPECT_GT(ref[0], 1e37);
  EXPECT_TRUE(std::isnan(ref[4]));

  // The bits variant gives the same flags.
  std::vector<uint16_t> y(6);
  std::vector<uint8_t> flags(6, 7);
  args.y = y.data();
  args.yStrideB = 6;
  args.yStrideM = 2;
  ASSERT_TRUE(referencePrequantBmm(args, &error, flags.data())) << error;
  EXPECT_EQ(flags, overflow);
}

} // namespace
