//===- VectorPackedOps.cpp - VOP3P packed and mixed-precision math --------===//

#include "InstTable.h"
#include "VectorFloat.h"

#include "mla-fp8/Reference/Formats.h"

using namespace llvm;

namespace mlir::mlafp8::emu {
namespace {

using Ctx = ExecContext;

/// Packed f32 (v_pk_*_f32): dword `hi` of source i per op_sel/op_sel_hi, with
/// neg_lo/neg_hi.
float pkF32(const Lane &L, unsigned i, bool hi) {
  const Operand &op = L.I.src(i);
  bool sel = hi ? (L.I.opSelHi >> i) & 1 : (L.I.opSel >> i) & 1;
  uint32_t b =
      op.kind == OpKind::Imm ? immBits32(op) : L.c.readRaw32(op, L.lane, sel);
  if (((hi ? L.I.negHi : L.I.negLo) >> i) & 1)
    b ^= 0x80000000u;
  return asF32(b);
}

/// Packed 16-bit: half of source i selected by op_sel (lo) / op_sel_hi (hi).
uint16_t pk16(const Lane &L, unsigned i, bool hi) {
  const Operand &op = L.I.src(i);
  bool sel = hi ? (L.I.opSelHi >> i) & 1 : (L.I.opSel >> i) & 1;
  if (op.kind == OpKind::Imm)
    return op.isFloat ? immBits16(op)
                      : uint16_t(sel ? immBits32(op) >> 16 : immBits32(op));
  uint32_t v = L.c.readRaw32(op, L.lane);
  return uint16_t(sel ? v >> 16 : v);
}
float pkF16(const Lane &L, unsigned i, bool hi) {
  uint16_t b = pk16(L, i, hi);
  if (((hi ? L.I.negHi : L.I.negLo) >> i) & 1)
    b ^= 0x8000;
  return halfToFloat(b);
}

/// Source i of v_fma_mix*: f16 (the half op_sel[i] picks) when op_sel_hi[i]
/// is set, else f32; abs and neg apply as on any VOP3 source.
double mixSource(const Lane &L, unsigned i) {
  const Operand &op = L.I.src(i);
  double v;
  if ((L.I.opSelHi >> i) & 1) {
    uint16_t h;
    if (op.kind == OpKind::Imm)
      h = op.isFloat ? immBits16(op) : uint16_t(immBits32(op));
    else
      h = uint16_t(L.c.readRaw32(op, L.lane) >> (16 * ((L.I.opSel >> i) & 1)));
    v = halfToFloat(h);
  } else {
    v = asF32(op.kind == OpKind::Imm ? immBits32(op)
                                     : L.c.readRaw32(op, L.lane));
  }
  if (op.abs)
    v = std::fabs(v);
  if (op.neg)
    v = -v;
  return v;
}

/// a * b + c of v_fma_mix*: the product of two f32 values is exact in double;
/// the sum is rounded once more only in the rare case it needs more than 53
/// bits, before the single rounding to the destination type.
double mixFma(const Lane &L) {
  return mixSource(L, 0) * mixSource(L, 1) + mixSource(L, 2);
}

/// A packed f16 row: the expression after NAME of the halves a, b (and cc for
/// three sources), once per half.
#define MLAFP8_PK16F(NAME, ...)                                                \
  MLAFP8_LANEWISE(NAME, Packed, {                                              \
    uint32_t r = 0;                                                            \
    for (unsigned h = 0; h < 2; ++h) {                                         \
      double a = pkF16(L, 0, h), b = pkF16(L, 1, h);                           \
      double cc = L.I.numSrcs() > 2 ? pkF16(L, 2, h) : 0.0;                    \
      (void)cc;                                                                \
      r |= uint32_t(floatToHalf(float(__VA_ARGS__))) << (16 * h);              \
    }                                                                          \
    L.setU32(r);                                                               \
  })
/// A packed 16-bit integer row: the expression after NAME of the halves a and
/// b, once per half.
#define MLAFP8_PK16I(NAME, ...)                                                \
  MLAFP8_LANEWISE(NAME, Packed, {                                              \
    uint32_t r = 0;                                                            \
    for (unsigned h = 0; h < 2; ++h) {                                         \
      uint32_t a = pk16(L, 0, h), b = pk16(L, 1, h);                           \
      r |= (uint32_t(__VA_ARGS__) & 0xffff) << (16 * h);                       \
    }                                                                          \
    L.setU32(r);                                                               \
  })

const InstDef kVectorPackedRows[] = {
    // Packed math (VOP3P).
    MLAFP8_LANEWISE("v_pk_fma_f32", Packed,
                    {
                      float lo =
                          std::fma(pkF32(L, 0, false), pkF32(L, 1, false),
                                   pkF32(L, 2, false));
                      float hi = std::fma(pkF32(L, 0, true), pkF32(L, 1, true),
                                          pkF32(L, 2, true));
                      L.setU64(bitsF32(lo) | (uint64_t(bitsF32(hi)) << 32));
                    }),

    // Mixed precision FMA: f32 result, or an f16 result into one half of the
    // destination with the other half kept.
    MLAFP8_LANEWISE("v_fma_mix_f32", Mix,
                    L.setU32(bitsF32(std::fma(float(mixSource(L, 0)),
                                              float(mixSource(L, 1)),
                                              float(mixSource(L, 2)))))),
    MLAFP8_LANEWISE("v_fma_mixlo_f16", Mix,
                    {
                      uint32_t old = L.c.readRaw32(L.I.ops[0], L.lane);
                      L.setU32((old & 0xffff0000u) | doubleToF16(mixFma(L)));
                    }),
    MLAFP8_LANEWISE("v_fma_mixhi_f16", Mix,
                    {
                      uint32_t old = L.c.readRaw32(L.I.ops[0], L.lane);
                      L.setU32((old & 0x0000ffffu) |
                               uint32_t(doubleToF16(mixFma(L))) << 16);
                    }),
    MLAFP8_LANEWISE("v_pk_mul_f32", Packed,
                    {
                      float lo = pkF32(L, 0, false) * pkF32(L, 1, false);
                      float hi = pkF32(L, 0, true) * pkF32(L, 1, true);
                      L.setU64(bitsF32(lo) | (uint64_t(bitsF32(hi)) << 32));
                    }),
    MLAFP8_LANEWISE("v_pk_add_f32", Packed,
                    {
                      float lo = pkF32(L, 0, false) + pkF32(L, 1, false);
                      float hi = pkF32(L, 0, true) + pkF32(L, 1, true);
                      L.setU64(bitsF32(lo) | (uint64_t(bitsF32(hi)) << 32));
                    }),
    MLAFP8_LANEWISE("v_pk_mov_b32", Packed,
                    {
                      // op_sel[0] picks src0's dword for lo, op_sel[1] src1's
                      // for hi.
                      uint32_t lo =
                          L.c.readRaw32(L.I.src(0), L.lane, L.I.opSel & 1);
                      uint32_t hi = L.c.readRaw32(L.I.src(1), L.lane,
                                                  (L.I.opSel >> 1) & 1);
                      L.setU64(lo | (uint64_t(hi) << 32));
                    }),
    MLAFP8_PK16F("v_pk_add_f16", a + b),
    MLAFP8_PK16F("v_pk_mul_f16", a *b),
    MLAFP8_PK16F("v_pk_fma_f16", std::fma(a, b, cc)),
    MLAFP8_PK16F("v_pk_max_f16", hwMinMax(L.c, a, b, true)),
    MLAFP8_PK16F("v_pk_min_f16", hwMinMax(L.c, a, b, false)),
    MLAFP8_PK16I("v_pk_add_u16", a + b),
    MLAFP8_PK16I("v_pk_sub_u16", a - b),
    MLAFP8_PK16I("v_pk_mul_lo_u16", a *b),
    MLAFP8_PK16I("v_pk_lshlrev_b16", b << (a & 15)),
    MLAFP8_PK16I("v_pk_lshrrev_b16", b >> (a & 15)),
    MLAFP8_PK16I("v_pk_ashrrev_i16", int16_t(b) >> (a & 15)),
    MLAFP8_PK16I("v_pk_max_u16", std::max(a, b)),
    MLAFP8_PK16I("v_pk_min_u16", std::min(a, b)),
    MLAFP8_PK16I("v_pk_max_i16", std::max(int16_t(a), int16_t(b))),
    MLAFP8_PK16I("v_pk_min_i16", std::min(int16_t(a), int16_t(b))),
};
#undef MLAFP8_PK16F
#undef MLAFP8_PK16I

} // namespace

void registerVectorPackedOps(InstTable &t) { t.add(kVectorPackedRows); }

} // namespace mlir::mlafp8::emu
