//===- Conversions.cpp - fp8/bf8 and bf16 conversions ---------------------===//
//
// Encoding and decoding go through the Reference library so that the
// emulator and the reference agree on every format's rounding and specials.
//
//===----------------------------------------------------------------------===//

#include "InstTable.h"

#include "mla-fp8/Reference/Formats.h"

using namespace llvm;

namespace mlir::mlafp8::emu {
namespace {

using Ctx = ExecContext;

/// The chip's fp8 (E4M3) or bf8 (E5M2) format.
FP8Format chipFormat(const Ctx &c, bool bf8) {
  return bf8 ? c.bf8Format : c.fp8Format;
}

/// Out-of-range values: MODE.FP16_OVFL = 1 saturates, 0 gives NaN.
FP8Overflow overflowMode(const Ctx &c) {
  return c.fp16Ovfl() ? FP8Overflow::Saturate : FP8Overflow::NaN;
}

/// v_cvt_pk_{fp8,bf8}_f32 d, s0, s1 [op_sel:[0,0,w]]: d.word[w] =
/// {fp8(s1), fp8(s0)}; the other word is kept.
template <bool Bf8> Error cvtPk8(Ctx &c, const Inst &I) {
  FP8Format f = chipFormat(c, Bf8);
  FP8Overflow o = overflowMode(c);
  bool hi = I.opSelCount == 3 && ((I.opSel >> 2) & 1);
  forEachLane(c, I, [&](const Lane &L) {
    uint32_t word =
        encodeFP8(L.f32(0), f, o) | (uint32_t(encodeFP8(L.f32(1), f, o)) << 8);
    uint32_t &r = c.vreg(I.ops[0], L.lane);
    r = hi ? (r & 0xffffu) | (word << 16) : (r & 0xffff0000u) | word;
  });
  return Error::success();
}

/// v_cvt_f32_{fp8,bf8}: byte 0, or the SDWA-selected byte.
template <bool Bf8> Error cvtF32From8(Ctx &c, const Inst &I) {
  FP8Format f = chipFormat(c, Bf8);
  forEachLane(c, I, [&](const Lane &L) {
    L.setU32(bitsF32(decodeFP8(uint8_t(L.raw32(0)), f)));
  });
  return Error::success();
}

/// v_cvt_pk_f32_{fp8,bf8}: two bytes of word 0, or of the SDWA-selected word.
template <bool Bf8> Error cvtPkF32From8(Ctx &c, const Inst &I) {
  FP8Format f = chipFormat(c, Bf8);
  bool hiWord = !I.sdwa && (I.opSel & 1);
  forEachLane(c, I, [&](const Lane &L) {
    uint32_t v = L.raw32(0);
    if (hiWord)
      v >>= 16;
    float lo = decodeFP8(uint8_t(v), f), hi = decodeFP8(uint8_t(v >> 8), f);
    L.setU64(bitsF32(lo) | (uint64_t(bitsF32(hi)) << 32));
  });
  return Error::success();
}

/// The E8M0-style scale of gfx950 scaled converts: 2^(exponent field - 127)
/// of an f32 operand.
float scaleOf(uint32_t bits) {
  return std::ldexp(1.0f, int((bits >> 23) & 0xff) - 127);
}

/// v_cvt_scalef32_pk_{fp8,bf8}_f32 d, s0, s1, scale [op_sel:[..,w]]: like
/// v_cvt_pk_fp8_f32 after dividing by the scale (inferred from gem5 and MLIR's
/// arith.scaling_truncf, ISA-NOTES §5).
template <bool Bf8> Error cvtScalePk8(Ctx &c, const Inst &I) {
  FP8Format f = chipFormat(c, Bf8);
  FP8Overflow o = overflowMode(c);
  bool hi = I.opSelCount == 4 && ((I.opSel >> 3) & 1);
  forEachLane(c, I, [&](const Lane &L) {
    float s = scaleOf(L.u32(2));
    uint32_t word = encodeFP8(L.f32(0) / s, f, o) |
                    (uint32_t(encodeFP8(L.f32(1) / s, f, o)) << 8);
    uint32_t &r = c.vreg(I.ops[0], L.lane);
    r = hi ? (r & 0xffffu) | (word << 16) : (r & 0xffff0000u) | word;
  });
  return Error::success();
}

/// v_cvt_scalef32_f32_{fp8,bf8} d, src, scale: upcast times the scale. The
/// byte is op_sel with its two bits swapped (ISA-NOTES §5): printed position 1
/// is byte bit 0, position 0 is byte bit 1.
template <bool Bf8> Error cvtScaleF32From8(Ctx &c, const Inst &I) {
  FP8Format f = chipFormat(c, Bf8);
  unsigned byte = ((I.opSel >> 1) & 1) | ((I.opSel & 1) << 1);
  forEachLane(c, I, [&](const Lane &L) {
    float v = decodeFP8(uint8_t(L.u32(0) >> (8 * byte)), f);
    L.setU32(bitsF32(v * scaleOf(L.u32(1))));
  });
  return Error::success();
}

/// v_cvt_scalef32_pk_f32_{fp8,bf8} d[0:1], src, scale [op_sel word].
template <bool Bf8> Error cvtScalePkF32From8(Ctx &c, const Inst &I) {
  FP8Format f = chipFormat(c, Bf8);
  bool hiWord = I.opSel & 1;
  forEachLane(c, I, [&](const Lane &L) {
    uint32_t v = L.u32(0) >> (hiWord ? 16 : 0);
    float s = scaleOf(L.u32(1));
    float lo = decodeFP8(uint8_t(v), f) * s,
          hi = decodeFP8(uint8_t(v >> 8), f) * s;
    L.setU64(bitsF32(lo) | (uint64_t(bitsF32(hi)) << 32));
  });
  return Error::success();
}

/// The stochastic-rounding converts: the ISA documents disagree on their
/// random bits, so running one is an error.
Error notModelledSR(Ctx &c, const Inst &I) {
  return c.fail(I, "stochastic-rounding converts are not modelled (the "
                   "ISA documents disagree on the random bits)");
}

const InstDef kConversionRows[] = {
    {"v_cvt_pk_fp8_f32", Operands::Def, InstClass::VALU, cvtPk8<false>},
    {"v_cvt_pk_bf8_f32", Operands::Def, InstClass::VALU, cvtPk8<true>},
    {"v_cvt_f32_fp8", Operands::Def, InstClass::VALU, cvtF32From8<false>},
    {"v_cvt_f32_bf8", Operands::Def, InstClass::VALU, cvtF32From8<true>},
    {"v_cvt_pk_f32_fp8", Operands::Def, InstClass::VALU, cvtPkF32From8<false>},
    {"v_cvt_pk_f32_bf8", Operands::Def, InstClass::VALU, cvtPkF32From8<true>},
    {"v_cvt_scalef32_pk_fp8_f32", Operands::Def, InstClass::VALU,
     cvtScalePk8<false>},
    {"v_cvt_scalef32_pk_bf8_f32", Operands::Def, InstClass::VALU,
     cvtScalePk8<true>},
    {"v_cvt_scalef32_f32_fp8", Operands::Def, InstClass::VALU,
     cvtScaleF32From8<false>},
    {"v_cvt_scalef32_f32_bf8", Operands::Def, InstClass::VALU,
     cvtScaleF32From8<true>},
    {"v_cvt_scalef32_pk_f32_fp8", Operands::Def, InstClass::VALU,
     cvtScalePkF32From8<false>},
    {"v_cvt_scalef32_pk_f32_bf8", Operands::Def, InstClass::VALU,
     cvtScalePkF32From8<true>},
    // gfx950 v_cvt_pk_bf16_f32 d, s0, s1: {bf16(s1), bf16(s0)}, RNE.
    MLAFP8_LANEWISE("v_cvt_pk_bf16_f32", Def,
                    L.setU32(floatToBF16(L.f32(0)) |
                             (uint32_t(floatToBF16(L.f32(1))) << 16))),
    // gfx950 v_cvt_pk_f16_f32 d, s0, s1: {f16(s0), f16(s1)}, RNE.
    MLAFP8_LANEWISE("v_cvt_pk_f16_f32", Def,
                    L.setU32(floatToHalf(L.f32(0)) |
                             (uint32_t(floatToHalf(L.f32(1))) << 16))),
    {"v_cvt_sr_fp8_f32", Operands::Def, InstClass::VALU, notModelledSR},
    {"v_cvt_sr_bf8_f32", Operands::Def, InstClass::VALU, notModelledSR},
};

} // namespace

FP8Format getChipFP8Format(const ChipInfo &chip, bool bf8) {
  // The chip table names the formats; each name is one of Reference's
  // (MfmaLayoutAgreementTest checks every chip).
  std::optional<FP8Format> format =
      parseFP8Format(bf8 ? chip.fp8E5M2TypeName : chip.fp8E4M3TypeName);
  assert(format && "the chip table names an fp8 format Reference lacks");
  return *format;
}

void registerConversionOps(InstTable &t) { t.add(kConversionRows); }

} // namespace mlir::mlafp8::emu
