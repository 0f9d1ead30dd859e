//===- PrequantBmmTest.cpp - Reference of the quantized bmm ---------------===//
//
// A hand-worked case with exact expected bits, and random cases against a
// second, deliberately naive implementation: dequantize all of X into a dense
// f64 array first, then a plain triple loop. The random cases run the
// reference as a kernel through the project's reference check
// (Runtime/Verify.h), which generates the inputs and layouts.
//
//===----------------------------------------------------------------------===//

#include "mla-fp8/Reference/PrequantBmm.h"
#include "mla-fp8/Runtime/Verify.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

using namespace mlir::mlafp8;

namespace {

uint16_t bf16(double value) { return doubleToBF16(value); }

//===----------------------------------------------------------------------===//
// Hand-worked case
//===----------------------------------------------------------------------===//

// E4M3FNUZ (FMAX 240), G = 2, K = 4: two groups per row.
//   row 0: [1, 0.30078125, -2, 0.5]
//     g0 amax 1: q = [240, 72.1875 -> 72]   g1 amax 2: q = [-240, 60]
//   row 1: [-3, 1, 0, 0]
//     g0 amax 3: q = [-240, 80]              g1 all zero: q = [0, 0]
//   w0 = [1, 0.5, 0.25, 2], w1 = [-1, 2, 1, 0.125]
// With s = amax / 240 (up to f32 rounding of 1/240, far below a bf16 ulp):
//   y00 = (276 / 240 + 2 * 60 / 240) * ws     = 396 / 240 * ws
//   y01 = (-96 / 240 + 2 * -232.5 / 240) * ws = -561 / 240 * ws
//   y10 = 3 * -200 / 240 * ws = -2.5 * ws;   y11 = 3 * 400 / 240 * ws = 5 * ws
// ws = 0.5: 0.825 -> bf16 211/256 (0x3F53); -1.16875 -> -150/128 (0xBF96);
// -1.25 (0xBFA0); 2.5 (0x4020).
struct HandCase {
  uint16_t x[8];
  uint8_t w[8];
  float ws = 0.5f;
  HandCase() {
    const double xValues[8] = {1.0, 0.30078125, -2.0, 0.5, -3.0, 1.0, 0.0, 0.0};
    for (int i = 0; i < 8; ++i)
      x[i] = bf16(xValues[i]);
    // 1 = 0x40, 0.5 = 0x38, 0.25 = 0x30, 2 = 0x48, -1 = 0xC0, 0.125 = 0x28.
    const uint8_t wBits[8] = {0x40, 0x38, 0x30, 0x48, 0xC0, 0x48, 0x40, 0x28};
    std::copy(wBits, wBits + 8, w);
  }
  PrequantBmmArgs getArgs(uint16_t *y) const {
    PrequantBmmArgs args;
    args.B = 1;
    args.M = 2;
    args.N = 2;
    args.K = 4;
    args.groupSize = 2;
    args.format = FP8Format::E4M3FNUZ;
    args.inputType = OutType::BF16;
    args.x = x;
    args.xStrideB = 8;
    args.xStrideM = 4;
    args.w = w;
    args.weightDescale = &ws;
    args.outType = OutType::BF16;
    args.y = y;
    args.yStrideB = 4;
    args.yStrideM = 2;
    return args;
  }
};

TEST(PrequantBmmTest, HandWorkedQuantizedRows) {
  HandCase hand;
  uint8_t q[4];
  float scales[2];
  quantizeActivationRow(hand.x, OutType::BF16, 4, 2, FP8Format::E4M3FNUZ, q,
                        scales);
  // 240 = 0x7F, 72 = 0x71, -240 = 0xFF, 60 = 0x6F.
  EXPECT_EQ(int(q[0]), 0x7F);
  EXPECT_EQ(int(q[1]), 0x71);
  EXPECT_EQ(int(q[2]), 0xFF);
  EXPECT_EQ(int(q[3]), 0x6F);
  EXPECT_EQ(scales[0], 1.0f * (1.0f / 240.0f));
  EXPECT_EQ(scales[1], 2.0f * (1.0f / 240.0f));
  quantizeActivationRow(hand.x + 4, OutType::BF16, 4, 2, FP8Format::E4M3FNUZ, q,
                        scales);
  // -240 = 0xFF, 80 = 0x72; the zero group quantizes to +0 at the floor scale.
  EXPECT_EQ(int(q[0]), 0xFF);
  EXPECT_EQ(int(q[1]), 0x72);
  EXPECT_EQ(int(q[2]), 0x00);
  EXPECT_EQ(int(q[3]), 0x00);
  EXPECT_EQ(scales[0], 3.0f * (1.0f / 240.0f));
  EXPECT_EQ(scales[1], 1e-10f * (1.0f / 240.0f));
}

TEST(PrequantBmmTest, HandWorkedOutputBits) {
  HandCase hand;
  uint16_t y[4] = {0, 0, 0, 0};
  std::string error;
  ASSERT_TRUE(referencePrequantBmm(hand.getArgs(y), &error)) << error;
  EXPECT_EQ(y[0], 0x3F53);
  EXPECT_EQ(y[1], 0xBF96);
  EXPECT_EQ(y[2], 0xBFA0);
  EXPECT_EQ(y[3], 0x4020);

  std::vector<double> exact;
  ASSERT_TRUE(referencePrequantBmmF64(hand.getArgs(nullptr), exact, &error))
      << error;
  ASSERT_EQ(exact.size(), 4u);
  const double expected[4] = {396.0 / 480, -561.0 / 480, -1.25, 2.5};
  for (int i = 0; i < 4; ++i)
    EXPECT_NEAR(exact[i], expected[i], 1e-6) << i;
}

TEST(PrequantBmmTest, HandWorkedBiasF16OutputTransposed) {
  HandCase hand;
  // Bias [0.5, -0.25] in f16; Y in (M, B, N) order inside a wider buffer.
  const uint16_t bias[2] = {0x3800, 0xB400};
  uint16_t y[8];
  std::fill(y, y + 8, 0xDEAD);
  PrequantBmmArgs args = hand.getArgs(y);
  args.bias = bias;
  args.outType = OutType::F16;
  args.yStrideB = 2;
  args.yStrideM = 4;
  std::string error;
  ASSERT_TRUE(referencePrequantBmm(args, &error)) << error;
  // 1.325 -> 1357/1024 (0x3D4D); -1.41875 -> -1453/1024 (0xBDAD);
  // -0.75 (0xBA00); 2.25 (0x4080).
  EXPECT_EQ(y[0], 0x3D4D);
  EXPECT_EQ(y[1], 0xBDAD);
  EXPECT_EQ(y[4], 0xBA00);
  EXPECT_EQ(y[5], 0x4080);
  for (int i : {2, 3, 6, 7})
    EXPECT_EQ(y[i], 0xDEAD) << i;
}

TEST(PrequantBmmTest, PartialLastGroupUsesOnlyExistingColumns) {
  // K = 3, G = 2: the last group is [x2] alone, so its amax is |x2| and it
  // quantizes to exactly FMAX even though the first group's amax is larger.
  const uint16_t x[3] = {bf16(8.0), bf16(1.0), bf16(0.375)};
  uint8_t q[3];
  float scales[2];
  quantizeActivationRow(x, OutType::BF16, 3, 2, FP8Format::E4M3FN, q, scales);
  EXPECT_EQ(getNumGroups(3, 2), 2);
  EXPECT_EQ(scales[1], 0.375f * (1.0f / 448.0f));
  EXPECT_EQ(int(q[2]), 0x7E);
  EXPECT_EQ(int(q[0]), 0x7E);
  EXPECT_EQ(decodeFP8(q[1], FP8Format::E4M3FN), 56.0f);
}

//===----------------------------------------------------------------------===//
// Naive second implementation
//===----------------------------------------------------------------------===//

/// Independent reading of SPEC.md: dequantize every X element into one dense
/// (B, M, K) array of s * q (exact in f64), then Y by a plain triple loop.
std::vector<uint16_t> naivePrequantBmm(const PrequantBmmArgs &a,
                                       std::vector<double> *unrounded) {
  float fmax = getFP8Max(a.format);
  std::vector<double> dequantized(a.B * a.M * a.K);
  for (int64_t b = 0; b < a.B; ++b) {
    for (int64_t m = 0; m < a.M; ++m) {
      const uint16_t *row = a.x + b * a.xStrideB + m * a.xStrideM;
      for (int64_t start = 0; start < a.K; start += a.groupSize) {
        int64_t stop = std::min(a.K, start + a.groupSize);
        float amax = 1e-10f;
        for (int64_t k = start; k < stop; ++k)
          amax = std::max(amax, std::fabs(outTypeToFloat(row[k], a.inputType)));
        float s = amax * (1.0f / fmax);
        float inverse = 1.0f / s;
        for (int64_t k = start; k < stop; ++k) {
          float scaled = outTypeToFloat(row[k], a.inputType) * inverse;
          scaled = std::min(std::max(scaled, -fmax), fmax);
          double q = decodeFP8(encodeFP8(scaled, a.format), a.format);
          dequantized[(b * a.M + m) * a.K + k] = static_cast<double>(s) * q;
        }
      }
    }
  }
  std::vector<uint16_t> y(a.B * a.M * a.N);
  if (unrounded)
    unrounded->assign(y.size(), 0.0);
  for (int64_t b = 0; b < a.B; ++b) {
    double ws = a.weightDescale[a.perBatchDescale ? b : 0];
    for (int64_t m = 0; m < a.M; ++m) {
      for (int64_t n = 0; n < a.N; ++n) {
        double sum = 0.0;
        for (int64_t k = 0; k < a.K; ++k)
          sum += dequantized[(b * a.M + m) * a.K + k] *
                 decodeFP8(a.w[(b * a.N + n) * a.K + k], a.format);
        double value = sum * ws;
        if (a.bias)
          value += outTypeToFloat(a.bias[b * a.N + n], a.outType);
        int64_t index = (b * a.M + m) * a.N + n;
        y[index] = roundToOutType(value, a.outType);
        if (unrounded)
          (*unrounded)[index] = value;
      }
    }
  }
  return y;
}

struct RandomConfig {
  FP8Format format;
  OutType inputType;
  OutType outType;
  int64_t B, M, N, K, groupSize;
  bool perBatchDescale;
  bool bias;
  runtime::VerifyLayout xLayout;
  runtime::VerifyLayout yLayout;
};

const char *getTypeName(OutType type) {
  return type == OutType::BF16 ? "bf16" : "f16";
}

/// Runs the rounded reference as a kernel through the project's reference
/// check (Runtime/Verify.h: inputs, layouts, Y within half an ulp of the f64
/// reference, nothing written outside Y), and compares its bits with the
/// naive implementation on the same inputs.
void runRandomCase(const RandomConfig &c, unsigned seed) {
  runtime::KernelEntry reference;
  reference.symbol = "reference";
  reference.n = c.N;
  reference.k = c.K;
  reference.groupSize = c.groupSize;
  reference.inType = getTypeName(c.inputType);
  reference.outType = getTypeName(c.outType);
  reference.fp8Type = getFP8FormatName(c.format);
  reference.weightScale = c.perBatchDescale
                              ? kernel_abi::WeightScaleMode::PerBatch
                              : kernel_abi::WeightScaleMode::PerTensor;
  reference.hasBias = c.bias;
  runtime::VerifyProblem problem;
  problem.batch = c.B;
  problem.m = c.M;
  problem.seed = seed;
  problem.x = c.xLayout;
  problem.y = c.yLayout;
  problem.varyRowScales = problem.zeroGroups = true;

  runtime::VerifyResult result = runtime::verifyPrequantBmm(
      reference, problem,
      [&](const runtime::PrequantBmmCall &call,
          unsigned) -> llvm::Expected<emu::ExecStats> {
        PrequantBmmArgs args;
        args.B = call.batch;
        args.M = call.m;
        args.N = c.N;
        args.K = c.K;
        args.groupSize = c.groupSize;
        args.format = c.format;
        args.inputType = c.inputType;
        args.x = call.x;
        args.xStrideB = call.xStrideB;
        args.xStrideM = call.xStrideM;
        args.w = call.w;
        args.weightDescale = call.wScale;
        args.perBatchDescale = c.perBatchDescale;
        args.bias = call.bias;
        args.outType = c.outType;
        args.y = call.y;
        args.yStrideB = call.yStrideB;
        args.yStrideM = call.yStrideM;
        std::string error;
        EXPECT_TRUE(referencePrequantBmm(args, &error)) << error;
        std::vector<double> exact, naiveExact;
        EXPECT_TRUE(referencePrequantBmmF64(args, exact, &error)) << error;
        std::vector<uint16_t> expected = naivePrequantBmm(args, &naiveExact);
        for (int64_t b = 0; b < c.B; ++b)
          for (int64_t m = 0; m < c.M; ++m)
            for (int64_t n = 0; n < c.N; ++n) {
              int64_t index = (b * c.M + m) * c.N + n;
              EXPECT_EQ(call.y[b * call.yStrideB + m * call.yStrideM + n],
                        expected[index])
                  << "b " << b << " m " << m << " n " << n;
              // Different summation orders agree to f64 rounding noise.
              EXPECT_NEAR(exact[index], naiveExact[index],
                          1e-12 * std::fabs(naiveExact[index]) + 1e-300);
            }
        return emu::ExecStats();
      });
  EXPECT_TRUE(result.passed()) << result.error << result.message;
  // Rounded once, to nearest.
  EXPECT_LE(result.maxUlp, 0.5);
}

TEST(PrequantBmmTest, RandomCasesMatchNaiveImplementation) {
  using F = FP8Format;
  using T = OutType;
  const runtime::VerifyLayout bmk = {false, 0}, mbk = {true, 0};
  // K-up's q_nope view of a (M, B, K + 7) tensor.
  const runtime::VerifyLayout padded = {true, 7};
  // Y inside larger (B, M, N + 3) and (M, B, N + 3) tensors.
  const runtime::VerifyLayout bmn = {false, 3}, mbn = {true, 3};
  const RandomConfig configs[] = {
      // DeepSeek V-up shape at TP = 8 (scaled down in B), gfx942.
      {F::E4M3FNUZ, T::BF16, T::BF16, 2, 5, 16, 512, 128, false, false, bmk,
       bmn},
      // K-up from the strided q_nope view, (M, B, N) output, per-head descale.
      {F::E4M3FNUZ, T::BF16, T::BF16, 3, 4, 32, 128, 128, true, false, padded,
       mbn},
      {F::E4M3FN, T::BF16, T::BF16, 2, 3, 8, 256, 64, true, true, mbk, bmn},
      {F::E4M3FN, T::F16, T::F16, 2, 3, 8, 100, 32, false, true, padded, mbn},
      // Partial last group: K % G != 0.
      {F::E4M3FNUZ, T::BF16, T::F16, 2, 3, 5, 200, 64, true, true, bmk, mbn},
      {F::E5M2FNUZ, T::F16, T::BF16, 1, 7, 9, 45, 16, false, true, mbk, bmn},
      {F::E5M2, T::BF16, T::BF16, 3, 2, 6, 130, 128, true, false, padded, bmn},
      // Group size 1 and a single group wider than K.
      {F::E4M3FN, T::BF16, T::BF16, 1, 3, 4, 9, 1, false, false, bmk, bmn},
      {F::E4M3FNUZ, T::F16, T::BF16, 2, 2, 3, 20, 256, true, true, bmk, mbn},
  };
  unsigned seed = 42;
  for (const RandomConfig &config : configs) {
    for (int repeat = 0; repeat < 3; ++repeat) {
      SCOPED_TRACE(::testing::Message()
                   << getFP8FormatName(config.format) << " K " << config.K
                   << " G " << config.groupSize << " seed " << seed);
      runRandomCase(config, seed++);
      if (::testing::Test::HasFatalFailure())
        return;
    }
  }
}

TEST(PrequantBmmTest, ZeroRowsWriteNothing) {
  HandCase hand;
  uint16_t y[4] = {0x1234, 0x1234, 0x1234, 0x1234};
  PrequantBmmArgs args = hand.getArgs(y);
  args.M = 0;
  std::string error;
  EXPECT_TRUE(referencePrequantBmm(args, &error)) << error;
  for (uint16_t value : y)
    EXPECT_EQ(value, 0x1234);
  // With no rows, no operand is read: null pointers are fine.
  args.x = nullptr;
  args.w = nullptr;
  args.weightDescale = nullptr;
  args.y = nullptr;
  EXPECT_TRUE(referencePrequantBmm(args, &error)) << error;
  std::vector<double> exact = {1.0};
  EXPECT_TRUE(referencePrequantBmmF64(args, exact, &error)) << error;
  EXPECT_TRUE(exact.empty());
}

TEST(PrequantBmmTest, InvalidArgumentsAreRejected) {
  HandCase hand;
  uint16_t y[4] = {0x1234, 0x1234, 0x1234, 0x1234};
  auto expectError = [&](PrequantBmmArgs args, const std::string &needle) {
    std::string error;
    EXPECT_FALSE(referencePrequantBmm(args, &error));
    EXPECT_NE(error.find(needle), std::string::npos) << error;
    EXPECT_NE(validatePrequantBmmArgs(args), "");
    for (uint16_t value : y)
      EXPECT_EQ(value, 0x1234);
  };
  EXPECT_EQ(validatePrequantBmmArgs(hand.getArgs(y)), "");
  PrequantBmmArgs args = hand.getArgs(y);
  args.groupSize = 3;
  expectError(args, "power of two");
  args.groupSize = 0;
  expectError(args, "power of two");
  args.groupSize = -4;
  expectError(args, "power of two");
  args = hand.getArgs(y);
  args.K = 0;
  expectError(args, "K");
  args = hand.getArgs(y);
  args.M = -1;
  expectError(args, "non-negative");
  args = hand.getArgs(y);
  args.x = nullptr;
  expectError(args, "x");
  args = hand.getArgs(y);
  args.w = nullptr;
  expectError(args, "w");
  args = hand.getArgs(y);
  args.weightDescale = nullptr;
  expectError(args, "descale");
  args = hand.getArgs(y);
  args.y = nullptr;
  expectError(args, "y");
  args = hand.getArgs(y);
  args.yStrideM = 1; // rows of N = 2 would overlap
  expectError(args, "overlap");
  // The f64 variant does not need Y.
  std::vector<double> exact;
  args = hand.getArgs(nullptr);
  EXPECT_TRUE(referencePrequantBmmF64(args, exact));
  args.groupSize = 6;
  std::string error;
  EXPECT_FALSE(referencePrequantBmmF64(args, exact, &error));
  EXPECT_FALSE(error.empty());
}

TEST(PrequantBmmTest, OverlapCheckAcceptsBothOrders) {
  HandCase hand;
  uint16_t y[16];
  PrequantBmmArgs args = hand.getArgs(y);
  args.B = 2;
  args.M = 2;
  args.N = 2;
  args.yStrideB = 2; // (M, B, N)
  args.yStrideM = 4;
  EXPECT_EQ(validatePrequantBmmArgs(args), "");
  args.yStrideM = 3; // the second row of b = 0 would hit b = 1
  EXPECT_NE(validatePrequantBmmArgs(args), "");
  args.yStrideB = 4; // (B, M, N)
  args.yStrideM = 2;
  EXPECT_EQ(validatePrequantBmmArgs(args), "");
  args.yStrideB = 2;
  EXPECT_NE(validatePrequantBmmArgs(args), "");
}
} // namespace
