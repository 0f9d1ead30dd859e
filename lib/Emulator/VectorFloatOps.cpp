//===- VectorFloatOps.cpp - VALU f32, f64 and f16 arithmetic --------------===//

#include "InstTable.h"
#include "VectorFloat.h"

#include "mla-fp8/Reference/Formats.h"

#include <limits>

using namespace llvm;

namespace mlir::mlafp8::emu {
namespace {

using Ctx = ExecContext;

/// v_max3/v_min3: two v_max/v_min steps.
float fmax3(const Ctx &c, float a, float b, float d) {
  return hwMinMax(c, hwMinMax(c, a, b, true), d, true);
}
float fmin3(const Ctx &c, float a, float b, float d) {
  return hwMinMax(c, hwMinMax(c, a, b, false), d, false);
}
/// gfx950 v_maximum3/v_minimum3 (IEEE 754-2019 maximum/minimum): any NaN
/// operand gives a quiet NaN; -0 < +0.
float ieeeMinMax3(float a, float b, float d, bool isMax) {
  for (float v : {a, b, d})
    if (std::isnan(v))
      return std::numeric_limits<float>::quiet_NaN();
  float r = a;
  for (float v : {b, d}) {
    if (v == r)
      r = isMax ? (std::signbit(r) ? v : r) : (std::signbit(r) ? r : v);
    else
      r = isMax ? std::max(r, v) : std::min(r, v);
  }
  return r;
}
/// V_MED3_F32: with any NaN operand the result is min3 (ISA pseudocode).
float fmed3(const Ctx &c, float a, float b, float d) {
  if (std::isnan(a) || std::isnan(b) || std::isnan(d))
    return fmin3(c, a, b, d);
  float mx = fmax3(c, a, b, d);
  if (mx == a)
    return hwMinMax(c, b, d, true);
  if (mx == b)
    return hwMinMax(c, a, d, true);
  return hwMinMax(c, a, b, true);
}

/// f32 -> u32 and f -> i32 with the VALU's saturation (NaN gives 0).
uint32_t cvtU32(float f) {
  if (std::isnan(f) || f <= 0)
    return 0;
  if (f >= 4294967296.0f)
    return ~0u;
  return uint32_t(f);
}
int32_t cvtI32(double f) {
  if (std::isnan(f))
    return 0;
  if (f <= -2147483648.0)
    return std::numeric_limits<int32_t>::min();
  if (f >= 2147483647.0)
    return std::numeric_limits<int32_t>::max();
  return int32_t(f);
}

/// V_DIV_SCALE_F32 (ISA pseudocode): scales S0 by 2^(+-64) when the quotient
/// S2/S1 would lose range; VCC flags that the numerator was scaled.
float divScale(float s0, float den, float num, bool &vcc) {
  vcc = false;
  if (num == 0 || den == 0 || std::isnan(num) || std::isnan(den) ||
      std::isinf(num) || std::isinf(den))
    return s0 == 0 && (num == 0 || den == 0)
               ? std::numeric_limits<float>::quiet_NaN()
               : s0;
  int eNum = std::ilogb(num), eDen = std::ilogb(den);
  if (eNum - eDen >= 96) {
    vcc = true;
    if (s0 == den)
      return std::ldexp(s0, 64);
  } else if (std::fpclassify(den) == FP_SUBNORMAL) {
    return std::ldexp(s0, 64);
  } else if (std::fpclassify(1.0f / den) == FP_SUBNORMAL &&
             std::fpclassify(num / den) == FP_SUBNORMAL) {
    vcc = true;
    if (s0 == den)
      return std::ldexp(s0, 64);
  } else if (std::fpclassify(1.0f / den) == FP_SUBNORMAL) {
    return std::ldexp(s0, -64);
  } else if (std::fpclassify(num / den) == FP_SUBNORMAL) {
    vcc = true;
    if (s0 == num)
      return std::ldexp(s0, 64);
  } else if (eNum <= -126 + 23) {
    return std::ldexp(s0, 64);
  }
  return s0;
}

/// V_DIV_FIXUP_F32: special cases of S2 / S1, else S0 with the quotient's
/// sign.
float divFixup(float q, float den, float num) {
  bool sign = std::signbit(num) != std::signbit(den);
  float inf = std::numeric_limits<float>::infinity();
  if (std::isnan(den))
    return quiet(den);
  if (std::isnan(num))
    return quiet(num);
  if (den == 0 && num == 0)
    return std::numeric_limits<float>::quiet_NaN();
  if (std::isinf(den) && std::isinf(num))
    return std::numeric_limits<float>::quiet_NaN();
  if (den == 0 || std::isinf(num))
    return sign ? -inf : inf;
  if (std::isinf(den) || num == 0)
    return sign ? -0.0f : 0.0f;
  if (std::isnan(q))
    return sign ? -inf : inf;
  return sign ? -std::fabs(q) : std::fabs(q);
}

const InstDef kVectorFloatRows[] = {
    // f32.
    MLAFP8_LANEWISE("v_add_f32", Def, L.setF32(L.f32(0) + L.f32(1))),
    MLAFP8_LANEWISE("v_sub_f32", Def, L.setF32(L.f32(0) - L.f32(1))),
    MLAFP8_LANEWISE("v_subrev_f32", Def, L.setF32(L.f32(1) - L.f32(0))),
    MLAFP8_LANEWISE("v_mul_f32", Def, L.setF32(L.f32(0) * L.f32(1))),
    MLAFP8_LANEWISE("v_mul_legacy_f32", Def,
                    {
                      float a = L.f32(0), b = L.f32(1);
                      L.setF32(a == 0 || b == 0 ? 0.0f : a * b);
                    }),
    MLAFP8_LANEWISE("v_fma_f32", Def,
                    L.setF32(std::fma(L.f32(0), L.f32(1), L.f32(2)))),
    MLAFP8_LANEWISE("v_mad_f32", Def, L.setF32(L.f32(0) * L.f32(1) + L.f32(2))),
    MLAFP8_LANEWISE("v_fmac_f32", Def,
                    L.setF32(std::fma(L.f32(0), L.f32(1),
                                      asF32(L.c.vreg(L.I.ops[0], L.lane))))),
    MLAFP8_LANEWISE(
        "v_mac_f32", Def,
        L.setF32(L.f32(0) * L.f32(1) + asF32(L.c.vreg(L.I.ops[0], L.lane)))),

    // v_fmamk_f32 d, s0, K, s1 = s0 * K + s1; v_fmaak_f32 d, s0, s1, K.
    MLAFP8_LANEWISE("v_fmamk_f32", Def,
                    L.setF32(std::fma(L.f32(0), L.f32(1), L.f32(2)))),
    MLAFP8_LANEWISE("v_fmaak_f32", Def,
                    L.setF32(std::fma(L.f32(0), L.f32(1), L.f32(2)))),
    MLAFP8_LANEWISE("v_madmk_f32", Def,
                    L.setF32(L.f32(0) * L.f32(1) + L.f32(2))),
    MLAFP8_LANEWISE("v_madak_f32", Def,
                    L.setF32(L.f32(0) * L.f32(1) + L.f32(2))),
    MLAFP8_LANEWISE("v_max_f32", Def,
                    L.setF32(hwMinMax(L.c, L.f32(0), L.f32(1), true))),
    MLAFP8_LANEWISE("v_min_f32", Def,
                    L.setF32(hwMinMax(L.c, L.f32(0), L.f32(1), false))),
    MLAFP8_LANEWISE("v_max3_f32", Def,
                    L.setF32(fmax3(L.c, L.f32(0), L.f32(1), L.f32(2)))),
    MLAFP8_LANEWISE(
        "v_maximum3_f32", Def,
        L.setF32(ieeeMinMax3(L.f32(0), L.f32(1), L.f32(2), /*isMax=*/true))),
    MLAFP8_LANEWISE(
        "v_minimum3_f32", Def,
        L.setF32(ieeeMinMax3(L.f32(0), L.f32(1), L.f32(2), /*isMax=*/false))),
    MLAFP8_LANEWISE("v_min3_f32", Def,
                    L.setF32(fmin3(L.c, L.f32(0), L.f32(1), L.f32(2)))),
    MLAFP8_LANEWISE("v_med3_f32", Def,
                    L.setF32(fmed3(L.c, L.f32(0), L.f32(1), L.f32(2)))),
    MLAFP8_LANEWISE("v_ldexp_f32", Def,
                    L.setF32(std::ldexp(L.f32(0), L.i32(1)))),
    MLAFP8_LANEWISE("v_rcp_f32", Def, L.setF32(1.0f / L.f32(0))),
    MLAFP8_LANEWISE("v_rcp_iflag_f32", Def, L.setF32(1.0f / L.f32(0))),
    MLAFP8_LANEWISE("v_rsq_f32", Def, L.setF32(1.0f / std::sqrt(L.f32(0)))),
    MLAFP8_LANEWISE("v_sqrt_f32", Def, L.setF32(std::sqrt(L.f32(0)))),
    MLAFP8_LANEWISE("v_exp_f32", Def, L.setF32(std::exp2(L.f32(0)))),
    MLAFP8_LANEWISE("v_log_f32", Def, L.setF32(std::log2(L.f32(0)))),
    MLAFP8_LANEWISE("v_sin_f32", Def,
                    L.setF32(float(std::sin(double(L.f32(0)) * 2 *
                                            3.14159265358979323846)))),
    MLAFP8_LANEWISE("v_cos_f32", Def,
                    L.setF32(float(std::cos(double(L.f32(0)) * 2 *
                                            3.14159265358979323846)))),
    MLAFP8_LANEWISE("v_trunc_f32", Def, L.setF32(std::trunc(L.f32(0)))),
    MLAFP8_LANEWISE("v_ceil_f32", Def, L.setF32(std::ceil(L.f32(0)))),
    MLAFP8_LANEWISE("v_floor_f32", Def, L.setF32(std::floor(L.f32(0)))),
    MLAFP8_LANEWISE("v_rndne_f32", Def, L.setF32(std::nearbyint(L.f32(0)))),
    MLAFP8_LANEWISE("v_fract_f32", Def,
                    {
                      float x = L.f32(0);
                      L.setF32(
                          std::isinf(x)
                              ? std::numeric_limits<float>::quiet_NaN()
                              : std::fmin(x - std::floor(x), 0x1.fffffep-1f));
                    }),
    MLAFP8_LANEWISE("v_frexp_mant_f32", Def,
                    {
                      int e;
                      float x = L.f32(0);
                      L.setF32(std::isinf(x) || std::isnan(x)
                                   ? x
                                   : std::frexp(x, &e));
                    }),
    MLAFP8_LANEWISE("v_frexp_exp_i32_f32", Def,
                    {
                      int e = 0;
                      float x = L.f32(0);
                      if (!std::isinf(x) && !std::isnan(x))
                        std::frexp(x, &e);
                      L.setU32(uint32_t(e));
                    }),
    MLAFP8_LANEWISE("v_cvt_f32_u32", Def, L.setF32(float(L.u32(0)))),
    MLAFP8_LANEWISE("v_cvt_f32_i32", Def, L.setF32(float(L.i32(0)))),
    MLAFP8_LANEWISE("v_cvt_u32_f32", Def, L.setU32(cvtU32(L.f32(0)))),
    MLAFP8_LANEWISE("v_cvt_i32_f32", Def, L.setU32(uint32_t(cvtI32(L.f32(0))))),
    MLAFP8_LANEWISE(
        "v_cvt_rpi_i32_f32", Def,
        L.setU32(uint32_t(cvtI32(std::floor(double(L.f32(0)) + 0.5))))),
    MLAFP8_LANEWISE("v_cvt_flr_i32_f32", Def,
                    L.setU32(uint32_t(cvtI32(std::floor(L.f32(0)))))),
    MLAFP8_LANEWISE("v_cvt_f16_f32", Def, L.setU16(floatToHalf(L.f32(0)))),
    MLAFP8_LANEWISE("v_cvt_f32_f16", Def, L.setF32(L.f16(0))),
    MLAFP8_LANEWISE("v_cvt_f64_f32", Def, L.setF64(double(L.f32(0)))),
    MLAFP8_LANEWISE("v_cvt_f32_f64", Def, L.setF32(float(L.f64(0)))),
    MLAFP8_LANEWISE("v_cvt_f64_i32", Def, L.setF64(double(L.i32(0)))),
    MLAFP8_LANEWISE("v_cvt_f64_u32", Def, L.setF64(double(L.u32(0)))),
    MLAFP8_LANEWISE("v_cvt_i32_f64", Def, L.setU32(uint32_t(cvtI32(L.f64(0))))),
    MLAFP8_LANEWISE("v_cvt_u32_f64", Def,
                    {
                      double d = L.f64(0);
                      L.setU32(std::isnan(d) || d <= 0 ? 0
                               : d >= 4294967295.0     ? ~0u
                                                       : uint32_t(d));
                    }),
    MLAFP8_LANEWISE("v_cvt_pkrtz_f16_f32", Def,
                    {
                      auto rtz = [](float f) {
                        uint16_t h = floatToHalf(f);
                        // Round toward zero: step back when RNE rounded away
                        // from zero.
                        if (!std::isnan(f) &&
                            std::fabs(halfToFloat(h)) > std::fabs(f))
                          --h;
                        return h;
                      };
                      L.setU32(rtz(L.f32(0)) | (uint32_t(rtz(L.f32(1))) << 16));
                    }),
    MLAFP8_LANEWISE("v_pack_b32_f16", Def,
                    L.setU32(uint32_t(L.u16(0)) | (uint32_t(L.u16(1)) << 16))),
    MLAFP8_LANEWISE("v_cvt_pk_u16_u32", Def,
                    L.setU32((std::min(L.u32(0), 0xffffu)) |
                             (std::min(L.u32(1), 0xffffu) << 16))),

    // Division helpers.
    {"v_div_scale_f32", Operands::TwoDefs, InstClass::VALU,
     [](Ctx &c, const Inst &I) -> Error {
       uint64_t vcc = 0;
       forEachLane(c, I, [&](const Lane &L) {
         bool flag;
         L.setF32(divScale(L.f32(0), L.f32(1), L.f32(2), flag));
         if (flag)
           vcc |= 1ull << L.lane;
       });
       c.writeS64(I.ops[1], vcc);
       return Error::success();
     }},
    {"v_div_fmas_f32", Operands::Def, InstClass::VALU,
     [](Ctx &c, const Inst &I) -> Error {
       uint64_t vcc = c.w.getVcc();
       forEachLane(c, I, [&](const Lane &L) {
         float r = std::fma(L.f32(0), L.f32(1), L.f32(2));
         if ((vcc >> L.lane) & 1)
           r = std::ldexp(r, std::ilogb(L.f32(2)) >= 0 ? 64 : -64);
         L.setF32(r);
       });
       return Error::success();
     }},
    MLAFP8_LANEWISE("v_div_fixup_f32", Def,
                    L.setF32(divFixup(L.f32(0), L.f32(1), L.f32(2)))),

    // f64.
    MLAFP8_LANEWISE("v_add_f64", Def, L.setF64(L.f64(0) + L.f64(1))),
    MLAFP8_LANEWISE("v_mul_f64", Def, L.setF64(L.f64(0) * L.f64(1))),
    MLAFP8_LANEWISE("v_fma_f64", Def,
                    L.setF64(std::fma(L.f64(0), L.f64(1), L.f64(2)))),
    MLAFP8_LANEWISE("v_max_f64", Def,
                    L.setF64(hwMinMax(L.c, L.f64(0), L.f64(1), true))),
    MLAFP8_LANEWISE("v_min_f64", Def,
                    L.setF64(hwMinMax(L.c, L.f64(0), L.f64(1), false))),
    MLAFP8_LANEWISE("v_rcp_f64", Def, L.setF64(1.0 / L.f64(0))),
    MLAFP8_LANEWISE("v_ldexp_f64", Def,
                    L.setF64(std::ldexp(L.f64(0), L.i32(1)))),

    // f16 (results in the low half).
    MLAFP8_LANEWISE("v_add_f16", Def,
                    L.setU16(floatToHalf(float(double(L.f16(0)) + L.f16(1))))),
    MLAFP8_LANEWISE("v_sub_f16", Def,
                    L.setU16(floatToHalf(float(double(L.f16(0)) - L.f16(1))))),
    MLAFP8_LANEWISE("v_mul_f16", Def,
                    L.setU16(floatToHalf(float(double(L.f16(0)) * L.f16(1))))),
    MLAFP8_LANEWISE(
        "v_fma_f16", Def,
        L.setU16(floatToHalf(float(
            std::fma(double(L.f16(0)), double(L.f16(1)), double(L.f16(2))))))),
    MLAFP8_LANEWISE(
        "v_max_f16", Def,
        L.setU16(floatToHalf(hwMinMax(L.c, L.f16(0), L.f16(1), true)))),
    MLAFP8_LANEWISE(
        "v_min_f16", Def,
        L.setU16(floatToHalf(hwMinMax(L.c, L.f16(0), L.f16(1), false)))),
};

} // namespace

void registerVectorFloatOps(InstTable &t) { t.add(kVectorFloatRows); }

} // namespace mlir::mlafp8::emu
