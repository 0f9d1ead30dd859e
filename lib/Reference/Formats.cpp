//===- Formats.cpp - fp8, bf16 and f16 encodings --------------------------===//
//
// Every narrowing conversion goes through one integer rounding routine that
// works on the exact f64 value, so f32 and f64 inputs round once and
// identically.
//
//===----------------------------------------------------------------------===//

#include "mla-fp8/Reference/Formats.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace mlir::mlafp8 {

namespace {

/// Layout of one fp8 format.
struct FP8Layout {
  int manBits;
  int bias;
  bool fnuz;
  /// Largest finite magnitude as a 7-bit code.
  uint8_t maxCode;
};

} // namespace

static FP8Layout getLayout(FP8Format format) {
  switch (format) {
  case FP8Format::E4M3FNUZ:
    return {3, 8, true, 0x7F};
  case FP8Format::E4M3FN:
    return {3, 7, false, 0x7E};
  case FP8Format::E5M2FNUZ:
    return {2, 16, true, 0x7F};
  case FP8Format::E5M2:
    return {2, 15, false, 0x7B};
  }
  return {3, 8, true, 0x7F};
}

static uint64_t bitsOf(double value) {
  uint64_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

/// Rounds a finite, non-negative f64 to nearest even on a binary format with
/// `manBits` explicit mantissa bits, exponent bias `bias`, gradual underflow,
/// and no upper exponent limit. The result is the code (biasedExponent <<
/// manBits) | mantissa; codes grow with the value, so callers detect overflow
/// as `code > maxFiniteCode` (a tie just above max that rounds up lands there
/// too, as IEEE requires).
static uint64_t roundMagnitude(double magnitude, int manBits, int bias) {
  uint64_t bits = bitsOf(magnitude);
  int biasedExp = static_cast<int>((bits >> 52) & 0x7FF);
  uint64_t frac = bits & ((uint64_t(1) << 52) - 1);
  if (biasedExp == 0 && frac == 0)
    return 0;
  // magnitude = sig * 2^(exp - 52).
  uint64_t sig = biasedExp == 0 ? frac : frac | (uint64_t(1) << 52);
  int exp = biasedExp == 0 ? -1022 : biasedExp - 1023;
  int minExp = 1 - bias;
  // Below the smallest normal the quantum stays that of the denormals.
  int quantumExp = (exp > minExp ? exp : minExp) - manBits;
  int shift = quantumExp - (exp - 52);
  // sig < 2^53, so sig / 2^shift < 1/2 and rounds to zero.
  if (shift >= 54)
    return 0;
  uint64_t n = sig >> shift;
  uint64_t rem = sig & ((uint64_t(1) << shift) - 1);
  uint64_t half = uint64_t(1) << (shift - 1);
  if (rem > half || (rem == half && (n & 1)))
    ++n;
  uint64_t hidden = uint64_t(1) << manBits;
  if (n < hidden)
    return n;
  int resultExp = quantumExp + manBits;
  // Rounding carried into the next binade.
  if (n == 2 * hidden) {
    n = hidden;
    ++resultExp;
  }
  return (uint64_t(resultExp + bias) << manBits) | (n - hidden);
}

const char *getFP8FormatName(FP8Format format) {
  switch (format) {
  case FP8Format::E4M3FNUZ:
    return "f8E4M3FNUZ";
  case FP8Format::E4M3FN:
    return "f8E4M3FN";
  case FP8Format::E5M2FNUZ:
    return "f8E5M2FNUZ";
  case FP8Format::E5M2:
    return "f8E5M2";
  }
  return "";
}

std::optional<FP8Format> parseFP8Format(std::string_view name) {
  for (FP8Format format : {FP8Format::E4M3FNUZ, FP8Format::E4M3FN,
                           FP8Format::E5M2FNUZ, FP8Format::E5M2})
    if (name == getFP8FormatName(format))
      return format;
  return std::nullopt;
}

float getFP8Max(FP8Format format) {
  switch (format) {
  case FP8Format::E4M3FNUZ:
    return 240.0f;
  case FP8Format::E4M3FN:
    return 448.0f;
  case FP8Format::E5M2FNUZ:
  case FP8Format::E5M2:
    return 57344.0f;
  }
  return 0.0f;
}

int getFP8MantissaBits(FP8Format format) { return getLayout(format).manBits; }

int getFP8Bias(FP8Format format) { return getLayout(format).bias; }

bool isFP8FNUZ(FP8Format format) { return getLayout(format).fnuz; }

uint8_t getFP8NaNBits(FP8Format format) {
  return isFP8FNUZ(format) ? 0x80 : 0x7F;
}

bool isFP8NaN(uint8_t bits, FP8Format format) {
  switch (format) {
  case FP8Format::E4M3FNUZ:
  case FP8Format::E5M2FNUZ:
    return bits == 0x80;
  case FP8Format::E4M3FN:
    return (bits & 0x7F) == 0x7F;
  case FP8Format::E5M2:
    return (bits & 0x7F) > 0x7C;
  }
  return false;
}

bool isFP8Inf(uint8_t bits, FP8Format format) {
  return format == FP8Format::E5M2 && (bits & 0x7F) == 0x7C;
}

float decodeFP8(uint8_t bits, FP8Format format) {
  bool negative = bits & 0x80;
  if (isFP8NaN(bits, format))
    return std::copysign(std::numeric_limits<float>::quiet_NaN(),
                         negative ? -1.0f : 1.0f);
  if (isFP8Inf(bits, format))
    return negative ? -std::numeric_limits<float>::infinity()
                    : std::numeric_limits<float>::infinity();
  FP8Layout layout = getLayout(format);
  int expField = (bits & 0x7F) >> layout.manBits;
  int mantissa = bits & ((1 << layout.manBits) - 1);
  float magnitude =
      expField == 0
          ? std::ldexp(static_cast<float>(mantissa),
                       1 - layout.bias - layout.manBits)
          : std::ldexp(static_cast<float>(mantissa + (1 << layout.manBits)),
                       expField - layout.bias - layout.manBits);
  return negative ? -magnitude : magnitude;
}

uint8_t encodeFP8(float value, FP8Format format, FP8Overflow overflow) {
  FP8Layout layout = getLayout(format);
  uint8_t sign = std::signbit(value) ? 0x80 : 0x00;
  uint8_t nanBits = layout.fnuz ? 0x80 : (0x7F | sign);
  if (std::isnan(value))
    return nanBits;
  uint8_t saturated = layout.maxCode | sign;
  if (std::isinf(value))
    return overflow == FP8Overflow::Saturate ? saturated : nanBits;
  uint64_t code = roundMagnitude(std::fabs(static_cast<double>(value)),
                                 layout.manBits, layout.bias);
  if (code > layout.maxCode)
    return overflow == FP8Overflow::Saturate ? saturated : nanBits;
  // FNUZ spends the -0 pattern on NaN.
  if (code == 0 && layout.fnuz)
    return 0x00;
  return static_cast<uint8_t>(code) | sign;
}

/// f64 -> IEEE-style 16-bit format with `manBits` mantissa bits and
/// `expBits` exponent bits, RNE, overflow to Inf, quiet NaN keeping the top
/// payload bits.
static uint16_t roundToHalfFormat(double value, int expBits, int manBits) {
  uint64_t bits = bitsOf(value);
  uint16_t sign = static_cast<uint16_t>((bits >> 63) << 15);
  uint16_t infCode = static_cast<uint16_t>(((1u << expBits) - 1) << manBits);
  if (std::isnan(value)) {
    uint16_t payload =
        static_cast<uint16_t>((bits >> (52 - manBits)) & ((1u << manBits) - 1));
    uint16_t quiet = static_cast<uint16_t>(1u << (manBits - 1));
    return sign | infCode | payload | quiet;
  }
  if (std::isinf(value))
    return sign | infCode;
  int bias = (1 << (expBits - 1)) - 1;
  uint64_t code = roundMagnitude(std::fabs(value), manBits, bias);
  if (code >= infCode)
    return sign | infCode;
  return sign | static_cast<uint16_t>(code);
}

uint16_t floatToBF16(float value) {
  // f32 -> f64 is exact, so this is a single rounding from f32.
  return roundToHalfFormat(value, 8, 7);
}

uint16_t doubleToBF16(double value) { return roundToHalfFormat(value, 8, 7); }

float bf16ToFloat(uint16_t bits) {
  uint32_t wide = static_cast<uint32_t>(bits) << 16;
  float value;
  std::memcpy(&value, &wide, sizeof(value));
  return value;
}

uint16_t floatToF16(float value) { return roundToHalfFormat(value, 5, 10); }

uint16_t doubleToF16(double value) { return roundToHalfFormat(value, 5, 10); }

float f16ToFloat(uint16_t bits) {
  uint32_t sign = static_cast<uint32_t>(bits >> 15) << 31;
  int expField = (bits >> 10) & 0x1F;
  uint32_t mantissa = bits & 0x3FF;
  if (expField == 0x1F) {
    // Inf or NaN: keep the payload in the top mantissa bits.
    uint32_t wide = sign | 0x7F800000u | (mantissa << 13);
    float value;
    std::memcpy(&value, &wide, sizeof(value));
    return value;
  }
  float magnitude =
      expField == 0
          ? std::ldexp(static_cast<float>(mantissa), -24)
          : std::ldexp(static_cast<float>(mantissa + 1024), expField - 25);
  return sign ? -magnitude : magnitude;
}

const char *getOutTypeName(OutType type) {
  return type == OutType::BF16 ? "bf16" : "f16";
}

uint16_t roundToOutType(double value, OutType type) {
  return type == OutType::BF16 ? doubleToBF16(value) : doubleToF16(value);
}

float outTypeToFloat(uint16_t bits, OutType type) {
  return type == OutType::BF16 ? bf16ToFloat(bits) : f16ToFloat(bits);
}

} // namespace mlir::mlafp8
