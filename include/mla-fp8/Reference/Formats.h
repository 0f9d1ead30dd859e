//===- Formats.h - fp8, bf16 and f16 encodings ------------------*- C++ -*-===//
//
// Bit-exact conversions between f32/f64 and the narrow formats the kernels
// use. Plain C++17: the reference, the emulator and the tests share these, so
// they must not depend on LLVM's APFloat or on the host's conversion
// instructions.
//
//===----------------------------------------------------------------------===//

#ifndef MLA_FP8_REFERENCE_FORMATS_H
#define MLA_FP8_REFERENCE_FORMATS_H

#include <cstdint>
#include <optional>
#include <string_view>

namespace mlir::mlafp8 {

/// The four 8-bit float formats. FNUZ formats (gfx942) have one NaN (0x80), no
/// -0 and no Inf; OCP formats (gfx950) have -0, E4M3FN has NaN 0x7F/0xFF and
/// no Inf, E5M2 is IEEE-like with Inf 0x7C/0xFC and NaN 0x7D-0x7F/0xFD-0xFF.
enum class FP8Format : uint8_t { E4M3FNUZ, E4M3FN, E5M2FNUZ, E5M2 };

/// Name as MLIR spells the type: "f8E4M3FNUZ", "f8E4M3FN", "f8E5M2FNUZ",
/// "f8E5M2".
const char *getFP8FormatName(FP8Format format);

/// Inverse of getFP8FormatName; std::nullopt for any other string.
std::optional<FP8Format> parseFP8Format(std::string_view name);

/// Largest finite value: 240, 448, 57344, 57344.
float getFP8Max(FP8Format format);

/// Number of explicit mantissa bits (3 or 2).
int getFP8MantissaBits(FP8Format format);

/// Exponent bias: 8, 7, 16, 15.
int getFP8Bias(FP8Format format);

/// True for the FNUZ formats (single NaN 0x80, no -0, no Inf).
bool isFP8FNUZ(FP8Format format);

/// The canonical NaN pattern the encoder produces for a positive NaN: 0x80
/// for FNUZ, 0x7F for the OCP formats (0xFF when the sign is set).
uint8_t getFP8NaNBits(FP8Format format);

/// True if `bits` is a NaN pattern of `format`.
bool isFP8NaN(uint8_t bits, FP8Format format);

/// True if `bits` is +-Inf (only E5M2 has Inf).
bool isFP8Inf(uint8_t bits, FP8Format format);

/// Exact value of an 8-bit pattern (NaN for the format's NaN patterns, +-Inf
/// for E5M2 Inf, -0.0f for OCP 0x80).
float decodeFP8(uint8_t bits, FP8Format format);

/// What encodeFP8 does with finite values beyond the rounding boundary above
/// the largest finite value, and with +-Inf.
enum class FP8Overflow {
  /// Clamp to +-max: what SPEC.md's clamp before the conversion produces.
  Saturate,
  /// Produce the format's NaN pattern, like v_cvt_pk_fp8_f32 with
  /// MODE.FP16_OVFL = 0: 0x80 for FNUZ; 0x7F | sign for both OCP formats. E5M2
  /// deliberately gives NaN (not Inf) here too, matching the hardware note.
  NaN,
};

/// Round-to-nearest-even f32 -> fp8.
///
/// Values whose magnitude rounds above the largest finite value (at or beyond
/// max + half an ulp, ties going to the even neighbour "2^(emax+1)") and +-Inf
/// are handled per `overflow`. NaN input gives the NaN pattern in both modes
/// (0x80 for FNUZ, 0x7F | sign for OCP). FNUZ has no -0: -0 and negative
/// values rounding to zero encode 0x00. OCP keeps the sign of zero (0x80).
uint8_t encodeFP8(float value, FP8Format format,
                  FP8Overflow overflow = FP8Overflow::Saturate);

/// f32 -> bf16 bits, round to nearest even, overflow to +-Inf. NaN stays NaN:
/// sign and the top payload bits are kept and the quiet bit is set (so a
/// signalling NaN never truncates into Inf).
uint16_t floatToBF16(float value);

/// f64 -> bf16 bits, rounded once directly from f64 (no double rounding
/// through f32); otherwise as floatToBF16.
uint16_t doubleToBF16(double value);

/// bf16 bits -> f32 (exact).
float bf16ToFloat(uint16_t bits);

/// f32 -> IEEE binary16 bits, round to nearest even, denormals kept, overflow
/// to +-Inf (an IEEE conversion, not saturating). NaN handled as floatToBF16.
uint16_t floatToF16(float value);

/// f64 -> IEEE binary16 bits, rounded once directly from f64.
uint16_t doubleToF16(double value);

/// IEEE binary16 bits -> f32 (exact).
float f16ToFloat(uint16_t bits);

/// A 16-bit float type: the output type and also the activation (input) type.
enum class OutType : uint8_t { BF16, F16 };

/// "bf16" or "f16".
const char *getOutTypeName(OutType type);

/// Rounds an f64 once to `type` (doubleToBF16 / doubleToF16).
uint16_t roundToOutType(double value, OutType type);

/// Exact f32 value of `bits` interpreted as `type`.
float outTypeToFloat(uint16_t bits, OutType type);

} // namespace mlir::mlafp8

#endif // MLA_FP8_REFERENCE_FORMATS_H
