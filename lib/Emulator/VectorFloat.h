//===- VectorFloat.h - NaN and min/max rules of the VALU --------*- C++ -*-===//
//
// Shared by the float, packed and compare families.
//
//===----------------------------------------------------------------------===//

#ifndef MLA_FP8_LIB_EMULATOR_VECTORFLOAT_H
#define MLA_FP8_LIB_EMULATOR_VECTORFLOAT_H

#include "Internal.h"

namespace mlir::mlafp8::emu {

/// Signalling NaNs have the top fraction bit clear; quiet() sets it.
inline bool isSignaling(float f) {
  return std::isnan(f) && !((bitsF32(f) >> 22) & 1);
}
inline float quiet(float f) { return asF32(bitsF32(f) | 0x400000u); }
inline bool isSignaling(double d) {
  return std::isnan(d) && !((bitsF64(d) >> 51) & 1);
}
inline double quiet(double d) { return asF64(bitsF64(d) | (1ull << 51)); }

/// v_max/v_min: IEEE mode quiets a signalling NaN operand and returns it;
/// otherwise a NaN operand yields the other operand. -0 < +0.
template <typename T>
inline T hwMinMax(const ExecContext &c, T a, T b, bool isMax) {
  bool na = std::isnan(a), nb = std::isnan(b);
  if (na || nb) {
    if (na && nb)
      return quiet(a);
    if (c.ieeeMode()) {
      if (na && isSignaling(a))
        return quiet(a);
      if (nb && isSignaling(b))
        return quiet(b);
    }
    return na ? b : a;
  }
  if (a == b)
    return isMax ? (std::signbit(a) ? b : a) : (std::signbit(a) ? a : b);
  return isMax ? (a > b ? a : b) : (a < b ? a : b);
}

} // namespace mlir::mlafp8::emu

#endif // MLA_FP8_LIB_EMULATOR_VECTORFLOAT_H
