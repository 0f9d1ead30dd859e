//===- FormatsTest.cpp - fp8, bf16 and f16 encodings ----------------------===//
//
// Expected values come from the format definitions computed another way than
// the library does (value tables built incrementally, hand-worked cases,
// brute-force nearest search), so a shared mistake cannot cancel out.
//
//===----------------------------------------------------------------------===//

#include "mla-fp8/Reference/Formats.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

using namespace mlir::mlafp8;

namespace {

constexpr FP8Format kAllFormats[] = {FP8Format::E4M3FNUZ, FP8Format::E4M3FN,
                                     FP8Format::E5M2FNUZ, FP8Format::E5M2};

float floatFromBits(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

double doubleFromBits(uint64_t bits) {
  double value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

uint32_t bitsFromFloat(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

/// Definition of a format as the ISA notes' table states it.
struct FormatFacts {
  FP8Format format;
  int manBits;
  int bias;
  double max;
  double minNormal;
  double minDenormal;
};

const FormatFacts kFacts[] = {
    {FP8Format::E4M3FNUZ, 3, 8, 240.0, 0x1p-7, 0x1p-10},
    {FP8Format::E4M3FN, 3, 7, 448.0, 0x1p-6, 0x1p-9},
    {FP8Format::E5M2FNUZ, 2, 16, 57344.0, 0x1p-15, 0x1p-17},
    {FP8Format::E5M2, 2, 15, 57344.0, 0x1p-14, 0x1p-16},
};

/// The special patterns, listed by hand.
bool isNaNByHand(FP8Format format, int bits) {
  switch (format) {
  case FP8Format::E4M3FNUZ:
  case FP8Format::E5M2FNUZ:
    return bits == 0x80;
  case FP8Format::E4M3FN:
    return bits == 0x7F || bits == 0xFF;
  case FP8Format::E5M2:
    return bits == 0x7D || bits == 0x7E || bits == 0x7F || bits == 0xFD ||
           bits == 0xFE || bits == 0xFF;
  }
  return false;
}

bool isInfByHand(FP8Format format, int bits) {
  return format == FP8Format::E5M2 && (bits == 0x7C || bits == 0xFC);
}

/// Magnitudes of codes 0..127, built by walking up from zero: the step is the
/// smallest denormal until the second normal binade starts, then doubles at
/// each binade boundary. Independent of any exponent/mantissa formula.
std::vector<double> buildMagnitudes(const FormatFacts &facts) {
  std::vector<double> values(128);
  double step = facts.minDenormal;
  int perBinade = 1 << facts.manBits;
  values[0] = 0.0;
  for (int code = 1; code < 128; ++code) {
    int previous = code - 1;
    if (previous >= 2 * perBinade && previous % perBinade == 0)
      step *= 2.0;
    values[code] = values[previous] + step;
  }
  return values;
}

/// Brute-force RNE encoder for finite |v| <= max: nearest positive finite
/// code, ties to the even code.
uint8_t encodeByNearestSearch(float value, FP8Format format) {
  const FormatFacts &facts = kFacts[static_cast<int>(format)];
  std::vector<double> magnitudes = buildMagnitudes(facts);
  double target = std::fabs(static_cast<double>(value));
  int best = -1;
  double bestDistance = 0.0;
  for (int code = 0; code < 128; ++code) {
    if (isNaNByHand(format, code) || isInfByHand(format, code))
      continue;
    double distance = std::fabs(magnitudes[code] - target);
    if (best < 0 || distance < bestDistance ||
        (distance == bestDistance && code % 2 == 0)) {
      best = code;
      bestDistance = distance;
    }
  }
  bool fnuz = format == FP8Format::E4M3FNUZ || format == FP8Format::E5M2FNUZ;
  if (best == 0 && fnuz)
    return 0x00;
  return static_cast<uint8_t>(best | (std::signbit(value) ? 0x80 : 0x00));
}

TEST(FP8FormatTest, NamesRoundTrip) {
  EXPECT_STREQ(getFP8FormatName(FP8Format::E4M3FNUZ), "f8E4M3FNUZ");
  EXPECT_STREQ(getFP8FormatName(FP8Format::E4M3FN), "f8E4M3FN");
  EXPECT_STREQ(getFP8FormatName(FP8Format::E5M2FNUZ), "f8E5M2FNUZ");
  EXPECT_STREQ(getFP8FormatName(FP8Format::E5M2), "f8E5M2");
  for (FP8Format format : kAllFormats)
    EXPECT_EQ(parseFP8Format(getFP8FormatName(format)), format);
  EXPECT_EQ(parseFP8Format("f8E4M3"), std::nullopt);
  EXPECT_EQ(parseFP8Format("f8e4m3fnuz"), std::nullopt);
  EXPECT_EQ(parseFP8Format(""), std::nullopt);
}

TEST(FP8FormatTest, MaxValues) {
  EXPECT_EQ(getFP8Max(FP8Format::E4M3FNUZ), 240.0f);
  EXPECT_EQ(getFP8Max(FP8Format::E4M3FN), 448.0f);
  EXPECT_EQ(getFP8Max(FP8Format::E5M2FNUZ), 57344.0f);
  EXPECT_EQ(getFP8Max(FP8Format::E5M2), 57344.0f);
}

TEST(FP8FormatTest, DecodeAll256BytesOfEveryFormat) {
  for (const FormatFacts &facts : kFacts) {
    SCOPED_TRACE(getFP8FormatName(facts.format));
    std::vector<double> magnitudes = buildMagnitudes(facts);
    for (int bits = 0; bits < 256; ++bits) {
      SCOPED_TRACE(bits);
      float value = decodeFP8(static_cast<uint8_t>(bits), facts.format);
      if (isNaNByHand(facts.format, bits)) {
        EXPECT_TRUE(std::isnan(value));
        EXPECT_TRUE(isFP8NaN(static_cast<uint8_t>(bits), facts.format));
        continue;
      }
      EXPECT_FALSE(isFP8NaN(static_cast<uint8_t>(bits), facts.format));
      if (isInfByHand(facts.format, bits)) {
        EXPECT_TRUE(std::isinf(value));
        EXPECT_EQ(std::signbit(value), bits >= 0x80);
        EXPECT_TRUE(isFP8Inf(static_cast<uint8_t>(bits), facts.format));
        continue;
      }
      EXPECT_FALSE(isFP8Inf(static_cast<uint8_t>(bits), facts.format));
      double expected = magnitudes[bits & 0x7F];
      EXPECT_EQ(static_cast<double>(value),
                bits >= 0x80 ? -expected : expected);
      // -0 exists only as OCP 0x80; FNUZ spends that pattern on NaN.
      EXPECT_EQ(std::signbit(value), bits >= 0x80);
    }
  }
}

TEST(FP8FormatTest, DecodeHandListedValues) {
  struct Case {
    FP8Format format;
    uint8_t bits;
    double value;
  };
  const Case cases[] = {
      {FP8Format::E4M3FNUZ, 0x40, 1.0},
      {FP8Format::E4M3FNUZ, 0x3F, 0.9375},
      {FP8Format::E4M3FNUZ, 0x7F, 240.0},
      {FP8Format::E4M3FNUZ, 0xFF, -240.0},
      {FP8Format::E4M3FNUZ, 0x08, 0x1p-7},
      {FP8Format::E4M3FNUZ, 0x07, 7 * 0x1p-10},
      {FP8Format::E4M3FNUZ, 0x01, 0x1p-10},
      {FP8Format::E4M3FNUZ, 0xC0, -1.0},
      {FP8Format::E4M3FN, 0x38, 1.0},
      {FP8Format::E4M3FN, 0x7E, 448.0},
      {FP8Format::E4M3FN, 0x7D, 416.0},
      {FP8Format::E4M3FN, 0x77, 240.0},
      {FP8Format::E4M3FN, 0x08, 0x1p-6},
      {FP8Format::E4M3FN, 0x01, 0x1p-9},
      {FP8Format::E4M3FN, 0xFE, -448.0},
      {FP8Format::E5M2FNUZ, 0x40, 1.0},
      {FP8Format::E5M2FNUZ, 0x7F, 57344.0},
      {FP8Format::E5M2FNUZ, 0x04, 0x1p-15},
      {FP8Format::E5M2FNUZ, 0x01, 0x1p-17},
      {FP8Format::E5M2FNUZ, 0x41, 1.25},
      {FP8Format::E5M2, 0x3C, 1.0},
      {FP8Format::E5M2, 0x7B, 57344.0},
      {FP8Format::E5M2, 0x04, 0x1p-14},
      {FP8Format::E5M2, 0x01, 0x1p-16},
      {FP8Format::E5M2, 0x03, 3 * 0x1p-16},
      {FP8Format::E5M2, 0xBD, -1.25},
  };
  for (const Case &c : cases)
    EXPECT_EQ(static_cast<double>(decodeFP8(c.bits, c.format)), c.value)
        << getFP8FormatName(c.format) << " bits " << int(c.bits);

  for (const FormatFacts &facts : kFacts) {
    SCOPED_TRACE(getFP8FormatName(facts.format));
    uint8_t maxBits = encodeFP8(static_cast<float>(facts.max), facts.format);
    EXPECT_EQ(decodeFP8(maxBits, facts.format), facts.max);
    EXPECT_EQ(static_cast<double>(decodeFP8(0x01, facts.format)),
              facts.minDenormal);
    EXPECT_EQ(static_cast<double>(decodeFP8(1 << facts.manBits, facts.format)),
              facts.minNormal);
  }
  EXPECT_TRUE(std::isnan(decodeFP8(0x80, FP8Format::E4M3FNUZ)));
  EXPECT_TRUE(std::isnan(decodeFP8(0x80, FP8Format::E5M2FNUZ)));
  EXPECT_TRUE(std::signbit(decodeFP8(0x80, FP8Format::E4M3FN)));
  EXPECT_EQ(decodeFP8(0x80, FP8Format::E4M3FN), 0.0f);
  EXPECT_TRUE(std::signbit(decodeFP8(0x80, FP8Format::E5M2)));
  EXPECT_EQ(decodeFP8(0xFC, FP8Format::E5M2),
            -std::numeric_limits<float>::infinity());
}

TEST(FP8FormatTest, DecodeIsMonotonicAndSymmetric) {
  for (const FormatFacts &facts : kFacts) {
    SCOPED_TRACE(getFP8FormatName(facts.format));
    float previous = -1.0f;
    for (int bits = 0; bits < 128; ++bits) {
      if (isNaNByHand(facts.format, bits) || isInfByHand(facts.format, bits))
        continue;
      float value = decodeFP8(static_cast<uint8_t>(bits), facts.format);
      EXPECT_GT(value, previous) << bits;
      previous = value;
      if (bits != 0) {
        EXPECT_EQ(decodeFP8(static_cast<uint8_t>(bits | 0x80), facts.format),
                  -value);
      }
    }
    EXPECT_EQ(static_cast<double>(previous), facts.max);
  }
}

struct EncodeCase {
  FP8Format format;
  float value;
  uint8_t saturate;
  uint8_t nan;
};

TEST(FP8FormatTest, EncodeHandWorkedCases) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const EncodeCase cases[] = {
      // E4M3FNUZ: 1.0 = 0x40, ulp 1/8 on [1, 2).
      {FP8Format::E4M3FNUZ, 1.0f, 0x40, 0x40},
      {FP8Format::E4M3FNUZ, 1.0625f, 0x40, 0x40}, // tie, down to even m=0
      {FP8Format::E4M3FNUZ, 1.1875f, 0x42, 0x42}, // tie, up to even m=2
      {FP8Format::E4M3FNUZ, std::nextafter(1.0625f, 2.0f), 0x41, 0x41},
      {FP8Format::E4M3FNUZ, std::nextafter(1.1875f, 0.0f), 0x41, 0x41},
      {FP8Format::E4M3FNUZ, -1.1875f, 0xC2, 0xC2},
      {FP8Format::E4M3FNUZ, 240.0f, 0x7F, 0x7F},
      // 248 is the tie between 240 (m=7, odd) and 256: overflows.
      {FP8Format::E4M3FNUZ, std::nextafter(248.0f, 0.0f), 0x7F, 0x7F},
      {FP8Format::E4M3FNUZ, 248.0f, 0x7F, 0x80},
      {FP8Format::E4M3FNUZ, -248.0f, 0xFF, 0x80},
      {FP8Format::E4M3FNUZ, 1000.0f, 0x7F, 0x80},
      {FP8Format::E4M3FNUZ, 0x1p-10f, 0x01, 0x01},
      {FP8Format::E4M3FNUZ, 0x1p-11f, 0x00,
       0x00}, // half min denormal: tie to 0
      {FP8Format::E4M3FNUZ, std::nextafter(0x1p-11f, 1.0f), 0x01, 0x01},
      {FP8Format::E4M3FNUZ, -0x1p-11f, 0x00, 0x00}, // no -0 in FNUZ
      {FP8Format::E4M3FNUZ, 3 * 0x1p-11f, 0x02, 0x02},
      {FP8Format::E4M3FNUZ, 15 * 0x1p-11f, 0x08, 0x08}, // denormal/normal tie
      {FP8Format::E4M3FNUZ, -0.0f, 0x00, 0x00},
      {FP8Format::E4M3FNUZ, inf, 0x7F, 0x80},
      {FP8Format::E4M3FNUZ, -inf, 0xFF, 0x80},
      {FP8Format::E4M3FNUZ, nan, 0x80, 0x80},
      {FP8Format::E4M3FNUZ, -nan, 0x80, 0x80},
      // E4M3FN: 1.0 = 0x38, max 448 = 0x7E (m=6, even).
      {FP8Format::E4M3FN, 1.0f, 0x38, 0x38},
      {FP8Format::E4M3FN, 1.0625f, 0x38, 0x38},
      {FP8Format::E4M3FN, 1.1875f, 0x3A, 0x3A},
      {FP8Format::E4M3FN, 448.0f, 0x7E, 0x7E},
      {FP8Format::E4M3FN, 456.0f, 0x7E, 0x7E},
      // 464 ties 448 with the (NaN) pattern above: even 448 wins.
      {FP8Format::E4M3FN, 464.0f, 0x7E, 0x7E},
      {FP8Format::E4M3FN, std::nextafter(464.0f, 1000.0f), 0x7E, 0x7F},
      {FP8Format::E4M3FN, -500.0f, 0xFE, 0xFF},
      {FP8Format::E4M3FN, 0x1p-9f, 0x01, 0x01},
      {FP8Format::E4M3FN, 0x1p-10f, 0x00, 0x00},
      {FP8Format::E4M3FN, -0x1p-10f, 0x80, 0x80}, // OCP keeps the sign of 0
      {FP8Format::E4M3FN, -0.0f, 0x80, 0x80},
      {FP8Format::E4M3FN, 0.0f, 0x00, 0x00},
      {FP8Format::E4M3FN, inf, 0x7E, 0x7F},
      {FP8Format::E4M3FN, -inf, 0xFE, 0xFF},
      {FP8Format::E4M3FN, nan, 0x7F, 0x7F},
      {FP8Format::E4M3FN, -nan, 0xFF, 0xFF},
      // E5M2FNUZ: 1.0 = 0x40, ulp 1/4 on [1, 2); max 57344 (m=3, odd).
      {FP8Format::E5M2FNUZ, 1.125f, 0x40, 0x40},
      {FP8Format::E5M2FNUZ, 1.375f, 0x42, 0x42},
      {FP8Format::E5M2FNUZ, 57344.0f, 0x7F, 0x7F},
      {FP8Format::E5M2FNUZ, std::nextafter(61440.0f, 0.0f), 0x7F, 0x7F},
      {FP8Format::E5M2FNUZ, 61440.0f, 0x7F, 0x80},
      {FP8Format::E5M2FNUZ, 0x1p-17f, 0x01, 0x01},
      {FP8Format::E5M2FNUZ, 0x1p-18f, 0x00, 0x00},
      {FP8Format::E5M2FNUZ, -0x1p-18f, 0x00, 0x00},
      {FP8Format::E5M2FNUZ, -inf, 0xFF, 0x80},
      {FP8Format::E5M2FNUZ, nan, 0x80, 0x80},
      // E5M2: 1.0 = 0x3C; overflow and Inf give NaN 0x7F|sign in NaN mode.
      {FP8Format::E5M2, 1.0f, 0x3C, 0x3C},
      {FP8Format::E5M2, 1.375f, 0x3E, 0x3E},
      {FP8Format::E5M2, 57344.0f, 0x7B, 0x7B},
      {FP8Format::E5M2, std::nextafter(61440.0f, 0.0f), 0x7B, 0x7B},
      {FP8Format::E5M2, 61440.0f, 0x7B, 0x7F},
      {FP8Format::E5M2, -61440.0f, 0xFB, 0xFF},
      {FP8Format::E5M2, 0x1p-16f, 0x01, 0x01},
      {FP8Format::E5M2, 0x1p-17f, 0x00, 0x00},
      {FP8Format::E5M2, -0x1p-17f, 0x80, 0x80},
      {FP8Format::E5M2, inf, 0x7B, 0x7F},
      {FP8Format::E5M2, -inf, 0xFB, 0xFF},
      {FP8Format::E5M2, nan, 0x7F, 0x7F},
  };
  for (const EncodeCase &c : cases) {
    SCOPED_TRACE(::testing::Message()
                 << getFP8FormatName(c.format) << " value " << c.value);
    EXPECT_EQ(int(encodeFP8(c.value, c.format)), int(c.saturate));
    EXPECT_EQ(int(encodeFP8(c.value, c.format, FP8Overflow::Saturate)),
              int(c.saturate));
    EXPECT_EQ(int(encodeFP8(c.value, c.format, FP8Overflow::NaN)), int(c.nan));
  }
}

TEST(FP8FormatTest, EncodeAroundEveryMidpoint) {
  for (const FormatFacts &facts : kFacts) {
    SCOPED_TRACE(getFP8FormatName(facts.format));
    std::vector<double> magnitudes = buildMagnitudes(facts);
    for (int code = 0; code + 1 < 128; ++code) {
      if (isNaNByHand(facts.format, code + 1) ||
          isInfByHand(facts.format, code + 1))
        break;
      // Midpoints of fp8 neighbours are exact in f32.
      float mid =
          static_cast<float>((magnitudes[code] + magnitudes[code + 1]) / 2);
      int even = code % 2 == 0 ? code : code + 1;
      for (float sign : {1.0f, -1.0f}) {
        int signBit = sign < 0 ? 0x80 : 0x00;
        auto expect = [&](int magnitudeCode) {
          bool fnuz = facts.format == FP8Format::E4M3FNUZ ||
                      facts.format == FP8Format::E5M2FNUZ;
          return magnitudeCode == 0 && fnuz ? 0 : magnitudeCode | signBit;
        };
        EXPECT_EQ(int(encodeFP8(sign * mid, facts.format)), expect(even))
            << code;
        EXPECT_EQ(
            int(encodeFP8(sign * std::nextafter(mid, 0.0f), facts.format)),
            expect(code))
            << code;
        EXPECT_EQ(
            int(encodeFP8(sign * std::nextafter(mid, 1e30f), facts.format)),
            expect(code + 1))
            << code;
      }
    }
  }
}

TEST(FP8FormatTest, EncodeMatchesNearestSearchOnRandomValues) {
  std::mt19937 rng(1234);
  for (const FormatFacts &facts : kFacts) {
    SCOPED_TRACE(getFP8FormatName(facts.format));
    std::uniform_real_distribution<double> logMagnitude(
        std::log2(facts.minDenormal) - 3, std::log2(facts.max));
    for (int i = 0; i < 20000; ++i) {
      float value = static_cast<float>(std::exp2(logMagnitude(rng)));
      if (value > facts.max)
        value = static_cast<float>(facts.max);
      if (i % 2)
        value = -value;
      ASSERT_EQ(int(encodeFP8(value, facts.format)),
                int(encodeByNearestSearch(value, facts.format)))
          << value;
    }
  }
}

TEST(FP8FormatTest, EveryFiniteByteRoundTrips) {
  for (FP8Format format : kAllFormats) {
    SCOPED_TRACE(getFP8FormatName(format));
    for (int bits = 0; bits < 256; ++bits) {
      uint8_t byte = static_cast<uint8_t>(bits);
      float value = decodeFP8(byte, format);
      if (std::isnan(value)) {
        // NaN input gives the canonical NaN, keeping the sign in OCP.
        uint8_t expected =
            getFP8NaNBits(format) | (isFP8FNUZ(format) ? 0 : (bits & 0x80));
        EXPECT_EQ(int(encodeFP8(value, format)), int(expected)) << bits;
        continue;
      }
      if (std::isinf(value)) {
        EXPECT_EQ(int(encodeFP8(value, format, FP8Overflow::NaN)),
                  0x7F | (bits & 0x80));
        continue;
      }
      EXPECT_EQ(int(encodeFP8(value, format)), bits);
      EXPECT_EQ(int(encodeFP8(value, format, FP8Overflow::NaN)), bits);
    }
  }
}

TEST(BF16Test, HandWorkedRounding) {
  struct Case {
    uint32_t floatBits;
    uint16_t bf16;
  };
  const Case cases[] = {
      {0x3F800000, 0x3F80}, // 1.0
      {0x3F808000, 0x3F80}, // tie, down to even
      {0x3F818000, 0x3F82}, // tie, up to even
      {0x3F808001, 0x3F81}, // just above a tie
      {0x3F817FFF, 0x3F81}, // just below a tie
      {0xBF818000, 0xBF82}, // negative tie
      {0x80000000, 0x8000}, // -0
      {0x00008000, 0x0000}, // half the smallest bf16 denormal: tie to 0
      {0x00008001, 0x0001},
      {0x00018000, 0x0002}, // denormal tie, up to even
      {0x00010000, 0x0001}, // smallest bf16 denormal 2^-133
      {0x007F8000, 0x0080}, // rounds up into the smallest normal
      {0x00000001, 0x0000}, // smallest f32 denormal
      {0x7F7F7FFF, 0x7F7F}, // just below the tie above max
      {0x7F7F8000, 0x7F80}, // tie above max (m odd): overflows to Inf
      {0x7F7FFFFF, 0x7F80}, // FLT_MAX
      {0xFF7FFFFF, 0xFF80},
      {0x7F800000, 0x7F80}, // Inf
      {0xFF800000, 0xFF80},
      {0x7FC00000, 0x7FC0}, // quiet NaN
      {0xFFC00000, 0xFFC0},
      {0x7F800001,
       0x7FC0}, // signalling NaN whose payload would truncate to Inf
      {0x7FA50000, 0x7FE5}, // payload kept, quiet bit set
  };
  for (const Case &c : cases) {
    float value = floatFromBits(c.floatBits);
    EXPECT_EQ(floatToBF16(value), c.bf16) << std::hex << c.floatBits;
    EXPECT_EQ(doubleToBF16(static_cast<double>(value)), c.bf16)
        << std::hex << c.floatBits;
  }
  EXPECT_EQ(bf16ToFloat(0x3F80), 1.0f);
  EXPECT_EQ(bf16ToFloat(0xC0A0), -5.0f);
  EXPECT_EQ(bf16ToFloat(0x0001), 0x1p-133f);
  EXPECT_EQ(bf16ToFloat(0x7F7F), 0x1.fep127f);
  EXPECT_TRUE(std::isnan(bf16ToFloat(0x7FC1)));
}

TEST(BF16Test, DoubleRoundsOnceDirectly) {
  // 1 + 2^-8 is the bf16 tie; a bit 2^-40 above it is lost by f32.
  double aboveTie = 1.0 + 0x1p-8 + 0x1p-40;
  EXPECT_EQ(floatToBF16(static_cast<float>(aboveTie)), 0x3F80);
  EXPECT_EQ(doubleToBF16(aboveTie), 0x3F81);
  double belowTie = 1.0 + 3 * 0x1p-8 - 0x1p-40;
  EXPECT_EQ(floatToBF16(static_cast<float>(belowTie)), 0x3F82);
  EXPECT_EQ(doubleToBF16(belowTie), 0x3F81);
  // Just below the overflow tie: f32 lands on it and overflows.
  double belowOverflow = 0x1.ffp127 - 0x1p90;
  EXPECT_EQ(floatToBF16(static_cast<float>(belowOverflow)), 0x7F80);
  EXPECT_EQ(doubleToBF16(belowOverflow), 0x7F7F);
  EXPECT_EQ(doubleToBF16(1e300), 0x7F80);
  EXPECT_EQ(doubleToBF16(-1e300), 0xFF80);
  EXPECT_EQ(doubleToBF16(1e-300), 0x0000);
  EXPECT_EQ(doubleToBF16(-1e-300), 0x8000);
  // Denormal tie: f32 drops the 2^-180 that decides it.
  double denormalAboveTie = 0x1p-134 + 0x1p-180;
  EXPECT_EQ(floatToBF16(static_cast<float>(denormalAboveTie)), 0x0000);
  EXPECT_EQ(doubleToBF16(denormalAboveTie), 0x0001);
  EXPECT_EQ(doubleToBF16(std::numeric_limits<double>::denorm_min()), 0x0000);
  // A signalling f64 NaN whose kept payload bits are zero must not become Inf
  // (f32 inputs are usually quieted by the host's f32 -> f64 conversion).
  double signalling = doubleFromBits(0x7FF0000000000001ull);
  EXPECT_EQ(doubleToBF16(signalling), 0x7FC0);
  EXPECT_EQ(doubleToBF16(-signalling), 0xFFC0);
  EXPECT_EQ(doubleToBF16(doubleFromBits(0x7FF4A00000000000ull)), 0x7FE5);
}

TEST(BF16Test, EveryNonNaNPatternRoundTrips) {
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    float value = bf16ToFloat(static_cast<uint16_t>(bits));
    EXPECT_EQ(bitsFromFloat(value), bits << 16);
    if (std::isnan(value))
      EXPECT_TRUE(std::isnan(bf16ToFloat(floatToBF16(value))));
    else
      EXPECT_EQ(floatToBF16(value), bits);
  }
}

TEST(F16Test, HandWorkedRounding) {
  struct Case {
    double value;
    uint16_t f16;
  };
  const Case cases[] = {
      {1.0, 0x3C00},
      {1.0 + 0x1p-11, 0x3C00},     // tie, down to even
      {1.0 + 3 * 0x1p-11, 0x3C02}, // tie, up to even
      {-1.0 - 3 * 0x1p-11, 0xBC02},
      {65504.0, 0x7BFF}, // max
      {65519.0, 0x7BFF}, // just below the tie above max
      {65520.0, 0x7C00}, // tie above max (m odd): Inf, not saturated
      {1e6, 0x7C00},
      {-1e6, 0xFC00},
      {0x1p-24, 0x0001}, // smallest denormal
      {0x1p-25, 0x0000}, // half of it: tie to 0
      {-0x1p-25, 0x8000},
      {0x1p-25 * 1.0000001, 0x0001},
      {3 * 0x1p-25, 0x0002},       // denormal tie, up to even
      {0x1p-14, 0x0400},           // smallest normal
      {0x1p-14 - 0x1p-25, 0x0400}, // tie between 0x03FF and 0x0400
      {1023 * 0x1p-24, 0x03FF},    // largest denormal
      {-0.0, 0x8000},
      {0.1, 0x2E66},
  };
  for (const Case &c : cases) {
    EXPECT_EQ(doubleToF16(c.value), c.f16) << c.value;
    EXPECT_EQ(floatToF16(static_cast<float>(c.value)), c.f16) << c.value;
  }
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(floatToF16(inf), 0x7C00);
  EXPECT_EQ(floatToF16(-inf), 0xFC00);
  EXPECT_EQ(floatToF16(floatFromBits(0x7F800001)), 0x7E00);
  EXPECT_EQ(floatToF16(floatFromBits(0x7FFFE000)), 0x7FFF);
  EXPECT_EQ(floatToF16(floatFromBits(0xFFC00000)), 0xFE00);
  EXPECT_EQ(f16ToFloat(0x3C00), 1.0f);
  EXPECT_EQ(f16ToFloat(0x7BFF), 65504.0f);
  EXPECT_EQ(f16ToFloat(0x0001), 0x1p-24f);
  EXPECT_EQ(f16ToFloat(0x03FF), 1023 * 0x1p-24f);
  EXPECT_EQ(f16ToFloat(0xC500), -5.0f);
  EXPECT_EQ(f16ToFloat(0x7C00), inf);
  EXPECT_TRUE(std::signbit(f16ToFloat(0x8000)));
  EXPECT_TRUE(std::isnan(f16ToFloat(0x7E00)));
  EXPECT_TRUE(std::isnan(f16ToFloat(0x7C01)));
}

TEST(F16Test, DoubleRoundsOnceDirectly) {
  double aboveTie = 1.0 + 0x1p-11 + 0x1p-40;
  EXPECT_EQ(floatToF16(static_cast<float>(aboveTie)), 0x3C00);
  EXPECT_EQ(doubleToF16(aboveTie), 0x3C01);
  // f32 rounds this onto the overflow tie 65520; direct rounding stays finite.
  double belowOverflow = 65520.0 - 0x1p-30;
  EXPECT_EQ(floatToF16(static_cast<float>(belowOverflow)), 0x7C00);
  EXPECT_EQ(doubleToF16(belowOverflow), 0x7BFF);
  EXPECT_EQ(doubleToF16(doubleFromBits(0x7FF0000000000001ull)), 0x7E00);
  EXPECT_EQ(doubleToF16(doubleFromBits(0xFFF0040000000000ull)), 0xFE01);
  double denormalAboveTie = 0x1p-25 + 0x1p-60;
  EXPECT_EQ(floatToF16(static_cast<float>(denormalAboveTie)), 0x0000);
  EXPECT_EQ(doubleToF16(denormalAboveTie), 0x0001);
}

TEST(F16Test, EveryNonNaNPatternRoundTrips) {
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    float value = f16ToFloat(static_cast<uint16_t>(bits));
    if (std::isnan(value)) {
      EXPECT_EQ(floatToF16(value), bits | 0x0200) << bits;
      continue;
    }
    EXPECT_EQ(floatToF16(value), bits) << bits;
    EXPECT_EQ(doubleToF16(value), bits) << bits;
  }
  // f16 values are f32 values: the decode is consistent with f32's ordering.
  for (uint32_t bits = 1; bits < 0x7C00; ++bits)
    EXPECT_LT(f16ToFloat(static_cast<uint16_t>(bits - 1)),
              f16ToFloat(static_cast<uint16_t>(bits)));
}

TEST(OutTypeTest, Dispatch) {
  EXPECT_STREQ(getOutTypeName(OutType::BF16), "bf16");
  EXPECT_STREQ(getOutTypeName(OutType::F16), "f16");
  EXPECT_EQ(roundToOutType(1.0 + 0x1p-8 + 0x1p-40, OutType::BF16), 0x3F81);
  EXPECT_EQ(roundToOutType(1.0 + 0x1p-11 + 0x1p-40, OutType::F16), 0x3C01);
  EXPECT_EQ(outTypeToFloat(0x3F80, OutType::BF16), 1.0f);
  EXPECT_EQ(outTypeToFloat(0x3C00, OutType::F16), 1.0f);
}

} // namespace
