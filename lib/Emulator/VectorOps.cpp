//===- VectorOps.cpp - VALU: VOP1/VOP2/VOP3/VOPC/VOP3P and cross-lane -----===//

#include "Internal.h"

#include "mla-fp8/Reference/Formats.h"

#include "llvm/ADT/bit.h"

#include <limits>

using namespace llvm;

namespace mlir::mlafp8::emu {
namespace {

using Ctx = ExecContext;

bool isSignaling(float f) { return std::isnan(f) && !((bitsF32(f) >> 22) & 1); }
float quiet(float f) { return asF32(bitsF32(f) | 0x400000u); }
bool isSignaling(double d) {
  return std::isnan(d) && !((bitsF64(d) >> 51) & 1);
}
double quiet(double d) { return asF64(bitsF64(d) | (1ull << 51)); }

/// v_max/v_min: IEEE mode quiets a signalling NaN operand and returns it;
/// otherwise a NaN operand yields the other operand. -0 < +0.
template <typename T> T hwMinMax(const Ctx &c, T a, T b, bool isMax) {
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

template <typename T> T med3i(T a, T b, T c) {
  return std::max(std::min(a, b), std::min(std::max(a, b), c));
}

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

uint32_t permByte(uint64_t in, unsigned sel) {
  if (sel >= 13)
    return 0xff;
  if (sel == 12)
    return 0;
  if (sel >= 8)
    return ((in >> (16 * (sel - 8) + 15)) & 1) ? 0xff : 0;
  return (in >> (8 * sel)) & 0xff;
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

bool cmpClass(double v, uint32_t mask, bool signalingNaN) {
  unsigned bit;
  if (std::isnan(v))
    bit = signalingNaN ? 0 : 1;
  else if (std::isinf(v))
    bit = v < 0 ? 2 : 9;
  else if (v == 0)
    bit = std::signbit(v) ? 5 : 6;
  else {
    bool neg = v < 0;
    bool denorm = std::fabs(v) < std::numeric_limits<float>::min();
    bit = neg ? (denorm ? 4 : 3) : (denorm ? 7 : 8);
  }
  return (mask >> bit) & 1;
}

/// VOPC: per-lane predicate into the mask operand (inactive lanes 0); the
/// v_cmpx forms also write EXEC.
template <typename P> Error vopc(Ctx &c, const Inst &I, bool isX, P pred) {
  uint64_t mask = 0;
  forEachLane(c, I, [&](const Lane &L) {
    if (pred(L))
      mask |= 1ull << L.lane;
  });
  if (I.ops[0].kind == OpKind::Sgpr)
    c.writeS64(I.ops[0], mask);
  if (isX)
    c.w.setExec(mask);
  return Error::success();
}

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

} // namespace

#define VOP(NAME, ...)                                                         \
  t[NAME] = {[](Ctx &c, const Inst &I) -> Error {                              \
               forEachLane(c, I, [&](const Lane &L) { __VA_ARGS__; });         \
               return Error::success();                                        \
             },                                                                \
             InstClass::VALU}

void registerVectorOps(OpTable &t) {
  // Moves and cross-lane.
  VOP("v_mov_b32", L.setU32(L.u32(0)));
  VOP("v_mov_b64", L.setU64(L.u64(0)));
  VOP("v_accvgpr_write_b32", L.setU32(L.u32(0)));
  VOP("v_accvgpr_read_b32", L.setU32(L.u32(0)));
  VOP("v_accvgpr_mov_b32", L.setU32(L.u32(0)));
  VOP("v_nop", (void)L);
  t["v_readfirstlane_b32"] = {[](Ctx &c, const Inst &I) -> Error {
                                uint64_t e = c.w.getExec();
                                unsigned lane = e ? __builtin_ctzll(e) : 0;
                                c.writeS32(I.ops[0],
                                           c.readRaw32(I.src(0), lane));
                                return Error::success();
                              },
                              InstClass::VALU};
  t["v_readlane_b32"] = {[](Ctx &c, const Inst &I) -> Error {
                           unsigned lane = c.readS32(I.src(1)) & 63;
                           c.writeS32(I.ops[0], c.readRaw32(I.src(0), lane));
                           return Error::success();
                         },
                         InstClass::VALU};
  t["v_writelane_b32"] = {[](Ctx &c, const Inst &I) -> Error {
                            unsigned lane = c.readS32(I.src(1)) & 63;
                            c.vreg(I.ops[0], lane) = c.readS32(I.src(0));
                            return Error::success();
                          },
                          InstClass::VALU};
  t["v_swap_b32"] = {[](Ctx &c, const Inst &I) -> Error {
                       uint64_t e = c.w.getExec();
                       for (unsigned l = 0; l < 64; ++l)
                         if ((e >> l) & 1)
                           std::swap(c.vreg(I.ops[0], l), c.vreg(I.ops[1], l));
                       return Error::success();
                     },
                     InstClass::VALU};
  // gfx950 v_permlane{16,32}_swap_b32 vdst, vsrc: odd rows of vdst trade
  // places with even rows of vsrc (16), or rows 2-3 of vdst with rows 0-1 of
  // vsrc (32); both registers change.
  for (unsigned stride : {16u, 32u}) {
    Handler h = stride == 16 ? Handler([](Ctx &c, const Inst &I) -> Error {
      uint64_t e = c.w.getExec();
      for (unsigned l = 0; l < 64; ++l)
        if ((l & 16) && ((e >> l) & 1))
          std::swap(c.vreg(I.ops[0], l), c.vreg(I.src(0), l - 16));
      return Error::success();
    })
                             : Handler([](Ctx &c, const Inst &I) -> Error {
                                 uint64_t e = c.w.getExec();
                                 for (unsigned l = 32; l < 64; ++l)
                                   if ((e >> l) & 1)
                                     std::swap(c.vreg(I.ops[0], l),
                                               c.vreg(I.src(0), l - 32));
                                 return Error::success();
                               });
    t[stride == 16 ? "v_permlane16_swap_b32" : "v_permlane32_swap_b32"] = {
        h, InstClass::VALU};
  }
  t["v_mbcnt_lo_u32_b32"] = {
      [](Ctx &c, const Inst &I) -> Error {
        forEachLane(c, I, [&](const Lane &L) {
          uint32_t m = L.lane >= 32 ? ~0u : uint32_t((1ull << L.lane) - 1);
          L.setU32(llvm::popcount(L.u32(0) & m) + L.u32(1));
        });
        return Error::success();
      },
      InstClass::VALU};
  t["v_mbcnt_hi_u32_b32"] = {
      [](Ctx &c, const Inst &I) -> Error {
        forEachLane(c, I, [&](const Lane &L) {
          uint32_t m = L.lane < 32 ? 0 : uint32_t((1ull << (L.lane - 32)) - 1);
          L.setU32(llvm::popcount(L.u32(0) & m) + L.u32(1));
        });
        return Error::success();
      },
      InstClass::VALU};

  // Integer.
  VOP("v_add_u32", L.setU32(L.u32(0) + L.u32(1)));
  VOP("v_sub_u32", L.setU32(L.u32(0) - L.u32(1)));
  VOP("v_subrev_u32", L.setU32(L.u32(1) - L.u32(0)));
  VOP("v_add_i32", L.setU32(L.u32(0) + L.u32(1)));
  VOP("v_sub_i32", L.setU32(L.u32(0) - L.u32(1)));
  VOP("v_and_b32", L.setU32(L.u32(0) & L.u32(1)));
  VOP("v_or_b32", L.setU32(L.u32(0) | L.u32(1)));
  VOP("v_xor_b32", L.setU32(L.u32(0) ^ L.u32(1)));
  VOP("v_xnor_b32", L.setU32(~(L.u32(0) ^ L.u32(1))));
  VOP("v_not_b32", L.setU32(~L.u32(0)));
  VOP("v_bfrev_b32", L.setU32(llvm::reverseBits(L.u32(0))));
  VOP("v_ffbh_u32", L.setU32(L.u32(0) ? llvm::countl_zero(L.u32(0)) : ~0u));
  VOP("v_ffbl_b32", L.setU32(L.u32(0) ? llvm::countr_zero(L.u32(0)) : ~0u));
  VOP("v_ffbh_i32", {
    int32_t v = L.i32(0);
    uint32_t x = v < 0 ? ~uint32_t(v) : uint32_t(v);
    L.setU32(v == 0 || v == -1 ? ~0u : llvm::countl_zero(x));
  });
  VOP("v_lshlrev_b32", L.setU32(L.u32(1) << (L.u32(0) & 31)));
  VOP("v_lshrrev_b32", L.setU32(L.u32(1) >> (L.u32(0) & 31)));
  VOP("v_ashrrev_i32", L.setU32(uint32_t(L.i32(1) >> (L.u32(0) & 31))));
  VOP("v_lshlrev_b64", L.setU64(L.u64(1) << (L.u32(0) & 63)));
  VOP("v_lshrrev_b64", L.setU64(L.u64(1) >> (L.u32(0) & 63)));
  VOP("v_ashrrev_i64",
      L.setU64(uint64_t(int64_t(L.u64(1)) >> (L.u32(0) & 63))));
  VOP("v_min_i32", L.setU32(uint32_t(std::min(L.i32(0), L.i32(1)))));
  VOP("v_max_i32", L.setU32(uint32_t(std::max(L.i32(0), L.i32(1)))));
  VOP("v_min_u32", L.setU32(std::min(L.u32(0), L.u32(1))));
  VOP("v_max_u32", L.setU32(std::max(L.u32(0), L.u32(1))));
  VOP("v_min3_i32",
      L.setU32(uint32_t(std::min({L.i32(0), L.i32(1), L.i32(2)}))));
  VOP("v_max3_i32",
      L.setU32(uint32_t(std::max({L.i32(0), L.i32(1), L.i32(2)}))));
  VOP("v_min3_u32", L.setU32(std::min({L.u32(0), L.u32(1), L.u32(2)})));
  VOP("v_max3_u32", L.setU32(std::max({L.u32(0), L.u32(1), L.u32(2)})));
  VOP("v_med3_i32", L.setU32(uint32_t(med3i(L.i32(0), L.i32(1), L.i32(2)))));
  VOP("v_med3_u32", L.setU32(med3i(L.u32(0), L.u32(1), L.u32(2))));
  VOP("v_mul_lo_u32", L.setU32(L.u32(0) * L.u32(1)));
  VOP("v_mul_hi_u32",
      L.setU32(uint32_t((uint64_t(L.u32(0)) * L.u32(1)) >> 32)));
  VOP("v_mul_hi_i32",
      L.setU32(uint32_t(uint64_t(int64_t(L.i32(0)) * L.i32(1)) >> 32)));
  VOP("v_mul_u32_u24", L.setU32((L.u32(0) & 0xffffff) * (L.u32(1) & 0xffffff)));
  VOP("v_mul_hi_u32_u24",
      L.setU32(uint32_t(
          (uint64_t(L.u32(0) & 0xffffff) * (L.u32(1) & 0xffffff)) >> 32)));
  VOP("v_mul_i32_i24", {
    int64_t a = int32_t(L.u32(0) << 8) >> 8, b = int32_t(L.u32(1) << 8) >> 8;
    L.setU32(uint32_t(a * b));
  });
  VOP("v_mad_u32_u24",
      L.setU32((L.u32(0) & 0xffffff) * (L.u32(1) & 0xffffff) + L.u32(2)));
  VOP("v_mad_i32_i24", {
    int64_t a = int32_t(L.u32(0) << 8) >> 8, b = int32_t(L.u32(1) << 8) >> 8;
    L.setU32(uint32_t(a * b) + L.u32(2));
  });
  VOP("v_bfe_u32", {
    unsigned off = L.u32(1) & 31, w = L.u32(2) & 31;
    L.setU32(w == 0 ? 0 : (L.u32(0) >> off) & ((1u << w) - 1));
  });
  VOP("v_bfe_i32", {
    unsigned off = L.u32(1) & 31, w = L.u32(2) & 31;
    uint32_t v = w == 0 ? 0 : (L.u32(0) >> off) & ((1u << w) - 1);
    L.setU32(w == 0 ? 0 : uint32_t(int32_t(v << (32 - w)) >> (32 - w)));
  });
  VOP("v_bfi_b32", L.setU32((L.u32(0) & L.u32(1)) | (~L.u32(0) & L.u32(2))));
  VOP("v_bfm_b32",
      L.setU32(uint32_t(((1ull << (L.u32(0) & 31)) - 1) << (L.u32(1) & 31))));
  VOP("v_alignbit_b32",
      L.setU32(uint32_t(((uint64_t(L.u32(0)) << 32) | L.u32(1)) >>
                        (L.u32(2) & 31))));
  VOP("v_alignbyte_b32",
      L.setU32(uint32_t(((uint64_t(L.u32(0)) << 32) | L.u32(1)) >>
                        (8 * (L.u32(2) & 3)))));
  VOP("v_add3_u32", L.setU32(L.u32(0) + L.u32(1) + L.u32(2)));
  VOP("v_or3_b32", L.setU32(L.u32(0) | L.u32(1) | L.u32(2)));
  VOP("v_and_or_b32", L.setU32((L.u32(0) & L.u32(1)) | L.u32(2)));
  VOP("v_lshl_or_b32", L.setU32((L.u32(0) << (L.u32(1) & 31)) | L.u32(2)));
  VOP("v_lshl_add_u32", L.setU32((L.u32(0) << (L.u32(1) & 31)) + L.u32(2)));
  VOP("v_add_lshl_u32", L.setU32((L.u32(0) + L.u32(1)) << (L.u32(2) & 31)));
  VOP("v_xad_u32", L.setU32((L.u32(0) ^ L.u32(1)) + L.u32(2)));
  VOP("v_lshl_add_u64", L.setU64((L.u64(0) << (L.u32(1) & 63)) + L.u64(2)));
  VOP("v_perm_b32", {
    uint64_t in = (uint64_t(L.u32(0)) << 32) | L.u32(1);
    uint32_t sel = L.u32(2), r = 0;
    for (unsigned i = 0; i < 4; ++i)
      r |= permByte(in, (sel >> (8 * i)) & 0xff) << (8 * i);
    L.setU32(r);
  });
  // gfx950 v_bitop3: every result bit is the truth table indexed by the
  // source bits (src0 << 2 | src1 << 1 | src2).
  VOP("v_bitop3_b32", {
    uint32_t a = L.u32(0), b = L.u32(1), cc = L.u32(2), r = 0;
    for (unsigned i = 0; i < 8; ++i)
      if ((L.I.bitop3 >> i) & 1)
        r |= ((i & 4) ? a : ~a) & ((i & 2) ? b : ~b) & ((i & 1) ? cc : ~cc);
    L.setU32(r);
  });
  VOP("v_bcnt_u32_b32", L.setU32(llvm::popcount(L.u32(0)) + L.u32(1)));
  VOP("v_cvt_f32_ubyte0", L.setF32(float(L.u32(0) & 0xff)));
  VOP("v_cvt_f32_ubyte1", L.setF32(float((L.u32(0) >> 8) & 0xff)));
  VOP("v_cvt_f32_ubyte2", L.setF32(float((L.u32(0) >> 16) & 0xff)));
  VOP("v_cvt_f32_ubyte3", L.setF32(float(L.u32(0) >> 24)));
  VOP("v_mad_u64_u32", {
    uint64_t r = uint64_t(L.u32(0)) * L.u32(1);
    uint64_t acc = L.u64(2);
    uint64_t sum = r + acc;
    L.setU64(sum);
    (void)(sum < r);
  });
  VOP("v_mad_i64_i32", {
    int64_t r = int64_t(L.i32(0)) * L.i32(1);
    L.setU64(uint64_t(r) + L.u64(2));
  });

  // Carry forms: ops[1] is the carry-out mask.
#define VOP_CARRY(NAME, ...)                                                   \
  t[NAME] = {[](Ctx &c, const Inst &I) -> Error {                              \
               uint64_t carry = 0;                                             \
               uint64_t cin = I.numSrcs() > 2 ? c.readS64(I.src(2)) : 0;       \
               (void)cin;                                                      \
               forEachLane(c, I, [&](const Lane &L) {                          \
                 uint64_t a = L.u32(0), b = L.u32(1);                          \
                 uint64_t ci = (cin >> L.lane) & 1;                            \
                 (void)ci;                                                     \
                 uint64_t r = __VA_ARGS__;                                     \
                 L.setU32(uint32_t(r));                                        \
                 if (r >> 32)                                                  \
                   carry |= 1ull << L.lane;                                    \
               });                                                             \
               c.writeS64(I.ops[1], carry);                                    \
               return Error::success();                                        \
             },                                                                \
             InstClass::VALU}
  VOP_CARRY("v_add_co_u32", a + b);
  VOP_CARRY("v_addc_co_u32", a + b + ci);
  VOP_CARRY("v_sub_co_u32", (a - b) & 0x1ffffffffull);
  VOP_CARRY("v_subrev_co_u32", (b - a) & 0x1ffffffffull);
  VOP_CARRY("v_subb_co_u32", (a - b - ci) & 0x1ffffffffull);
  VOP_CARRY("v_subbrev_co_u32", (b - a - ci) & 0x1ffffffffull);
#undef VOP_CARRY

  t["v_cndmask_b32"] = {[](Ctx &c, const Inst &I) -> Error {
                          uint64_t mask = c.readS64(I.src(2));
                          forEachLane(c, I, [&](const Lane &L) {
                            bool sel = (mask >> L.lane) & 1;
                            L.setU32(bitsF32(L.f32(sel ? 1 : 0)));
                          });
                          return Error::success();
                        },
                        InstClass::VALU};

  // f32.
  VOP("v_add_f32", L.setF32(L.f32(0) + L.f32(1)));
  VOP("v_sub_f32", L.setF32(L.f32(0) - L.f32(1)));
  VOP("v_subrev_f32", L.setF32(L.f32(1) - L.f32(0)));
  VOP("v_mul_f32", L.setF32(L.f32(0) * L.f32(1)));
  VOP("v_mul_legacy_f32", {
    float a = L.f32(0), b = L.f32(1);
    L.setF32(a == 0 || b == 0 ? 0.0f : a * b);
  });
  VOP("v_fma_f32", L.setF32(std::fma(L.f32(0), L.f32(1), L.f32(2))));
  VOP("v_mad_f32", L.setF32(L.f32(0) * L.f32(1) + L.f32(2)));
  VOP("v_fmac_f32", L.setF32(std::fma(L.f32(0), L.f32(1),
                                      asF32(L.c.vreg(L.I.ops[0], L.lane)))));
  VOP("v_mac_f32",
      L.setF32(L.f32(0) * L.f32(1) + asF32(L.c.vreg(L.I.ops[0], L.lane))));
  // v_fmamk_f32 d, s0, K, s1 = s0 * K + s1; v_fmaak_f32 d, s0, s1, K.
  VOP("v_fmamk_f32", L.setF32(std::fma(L.f32(0), L.f32(1), L.f32(2))));
  VOP("v_fmaak_f32", L.setF32(std::fma(L.f32(0), L.f32(1), L.f32(2))));
  VOP("v_madmk_f32", L.setF32(L.f32(0) * L.f32(1) + L.f32(2)));
  VOP("v_madak_f32", L.setF32(L.f32(0) * L.f32(1) + L.f32(2)));
  VOP("v_max_f32", L.setF32(hwMinMax(L.c, L.f32(0), L.f32(1), true)));
  VOP("v_min_f32", L.setF32(hwMinMax(L.c, L.f32(0), L.f32(1), false)));
  VOP("v_max3_f32", L.setF32(fmax3(L.c, L.f32(0), L.f32(1), L.f32(2))));
  VOP("v_maximum3_f32",
      L.setF32(ieeeMinMax3(L.f32(0), L.f32(1), L.f32(2), /*isMax=*/true)));
  VOP("v_minimum3_f32",
      L.setF32(ieeeMinMax3(L.f32(0), L.f32(1), L.f32(2), /*isMax=*/false)));
  VOP("v_min3_f32", L.setF32(fmin3(L.c, L.f32(0), L.f32(1), L.f32(2))));
  VOP("v_med3_f32", L.setF32(fmed3(L.c, L.f32(0), L.f32(1), L.f32(2))));
  VOP("v_ldexp_f32", L.setF32(std::ldexp(L.f32(0), L.i32(1))));
  VOP("v_rcp_f32", L.setF32(1.0f / L.f32(0)));
  VOP("v_rcp_iflag_f32", L.setF32(1.0f / L.f32(0)));
  VOP("v_rsq_f32", L.setF32(1.0f / std::sqrt(L.f32(0))));
  VOP("v_sqrt_f32", L.setF32(std::sqrt(L.f32(0))));
  VOP("v_exp_f32", L.setF32(std::exp2(L.f32(0))));
  VOP("v_log_f32", L.setF32(std::log2(L.f32(0))));
  VOP("v_sin_f32",
      L.setF32(float(std::sin(double(L.f32(0)) * 2 * 3.14159265358979323846))));
  VOP("v_cos_f32",
      L.setF32(float(std::cos(double(L.f32(0)) * 2 * 3.14159265358979323846))));
  VOP("v_trunc_f32", L.setF32(std::trunc(L.f32(0))));
  VOP("v_ceil_f32", L.setF32(std::ceil(L.f32(0))));
  VOP("v_floor_f32", L.setF32(std::floor(L.f32(0))));
  VOP("v_rndne_f32", L.setF32(std::nearbyint(L.f32(0))));
  VOP("v_fract_f32", {
    float x = L.f32(0);
    L.setF32(std::isinf(x) ? std::numeric_limits<float>::quiet_NaN()
                           : std::fmin(x - std::floor(x), 0x1.fffffep-1f));
  });
  VOP("v_frexp_mant_f32", {
    int e;
    float x = L.f32(0);
    L.setF32(std::isinf(x) || std::isnan(x) ? x : std::frexp(x, &e));
  });
  VOP("v_frexp_exp_i32_f32", {
    int e = 0;
    float x = L.f32(0);
    if (!std::isinf(x) && !std::isnan(x))
      std::frexp(x, &e);
    L.setU32(uint32_t(e));
  });
  VOP("v_cvt_f32_u32", L.setF32(float(L.u32(0))));
  VOP("v_cvt_f32_i32", L.setF32(float(L.i32(0))));
  VOP("v_cvt_u32_f32", L.setU32(cvtU32(L.f32(0))));
  VOP("v_cvt_i32_f32", L.setU32(uint32_t(cvtI32(L.f32(0)))));
  VOP("v_cvt_rpi_i32_f32",
      L.setU32(uint32_t(cvtI32(std::floor(double(L.f32(0)) + 0.5)))));
  VOP("v_cvt_flr_i32_f32", L.setU32(uint32_t(cvtI32(std::floor(L.f32(0))))));
  VOP("v_cvt_f16_f32", L.setU16(floatToHalf(L.f32(0))));
  VOP("v_cvt_f32_f16", L.setF32(L.f16(0)));
  VOP("v_cvt_f64_f32", L.setF64(double(L.f32(0))));
  VOP("v_cvt_f32_f64", L.setF32(float(L.f64(0))));
  VOP("v_cvt_f64_i32", L.setF64(double(L.i32(0))));
  VOP("v_cvt_f64_u32", L.setF64(double(L.u32(0))));
  VOP("v_cvt_i32_f64", L.setU32(uint32_t(cvtI32(L.f64(0)))));
  VOP("v_cvt_u32_f64", {
    double d = L.f64(0);
    L.setU32(std::isnan(d) || d <= 0 ? 0
             : d >= 4294967295.0     ? ~0u
                                     : uint32_t(d));
  });
  VOP("v_cvt_pkrtz_f16_f32", {
    auto rtz = [](float f) {
      uint16_t h = floatToHalf(f);
      // Round toward zero: step back when RNE rounded away from zero.
      if (!std::isnan(f) && std::fabs(halfToFloat(h)) > std::fabs(f))
        --h;
      return h;
    };
    L.setU32(rtz(L.f32(0)) | (uint32_t(rtz(L.f32(1))) << 16));
  });
  VOP("v_pack_b32_f16",
      L.setU32(uint32_t(L.u16(0)) | (uint32_t(L.u16(1)) << 16)));
  VOP("v_cvt_pk_u16_u32", L.setU32((std::min(L.u32(0), 0xffffu)) |
                                   (std::min(L.u32(1), 0xffffu) << 16)));

  // Division helpers.
  t["v_div_scale_f32"] = {[](Ctx &c, const Inst &I) -> Error {
                            uint64_t vcc = 0;
                            forEachLane(c, I, [&](const Lane &L) {
                              bool flag;
                              L.setF32(
                                  divScale(L.f32(0), L.f32(1), L.f32(2), flag));
                              if (flag)
                                vcc |= 1ull << L.lane;
                            });
                            c.writeS64(I.ops[1], vcc);
                            return Error::success();
                          },
                          InstClass::VALU};
  t["v_div_fmas_f32"] = {[](Ctx &c, const Inst &I) -> Error {
                           uint64_t vcc = c.w.getVcc();
                           forEachLane(c, I, [&](const Lane &L) {
                             float r = std::fma(L.f32(0), L.f32(1), L.f32(2));
                             if ((vcc >> L.lane) & 1)
                               r = std::ldexp(
                                   r, std::ilogb(L.f32(2)) >= 0 ? 64 : -64);
                             L.setF32(r);
                           });
                           return Error::success();
                         },
                         InstClass::VALU};
  VOP("v_div_fixup_f32", L.setF32(divFixup(L.f32(0), L.f32(1), L.f32(2))));

  // f64.
  VOP("v_add_f64", L.setF64(L.f64(0) + L.f64(1)));
  VOP("v_mul_f64", L.setF64(L.f64(0) * L.f64(1)));
  VOP("v_fma_f64", L.setF64(std::fma(L.f64(0), L.f64(1), L.f64(2))));
  VOP("v_max_f64", L.setF64(hwMinMax(L.c, L.f64(0), L.f64(1), true)));
  VOP("v_min_f64", L.setF64(hwMinMax(L.c, L.f64(0), L.f64(1), false)));
  VOP("v_rcp_f64", L.setF64(1.0 / L.f64(0)));
  VOP("v_ldexp_f64", L.setF64(std::ldexp(L.f64(0), L.i32(1))));

  // f16 (results in the low half).
  VOP("v_add_f16", L.setU16(floatToHalf(float(double(L.f16(0)) + L.f16(1)))));
  VOP("v_sub_f16", L.setU16(floatToHalf(float(double(L.f16(0)) - L.f16(1)))));
  VOP("v_mul_f16", L.setU16(floatToHalf(float(double(L.f16(0)) * L.f16(1)))));
  VOP("v_fma_f16",
      L.setU16(floatToHalf(float(
          std::fma(double(L.f16(0)), double(L.f16(1)), double(L.f16(2)))))));
  VOP("v_max_f16",
      L.setU16(floatToHalf(hwMinMax(L.c, L.f16(0), L.f16(1), true))));
  VOP("v_min_f16",
      L.setU16(floatToHalf(hwMinMax(L.c, L.f16(0), L.f16(1), false))));

  // Packed math (VOP3P).
  VOP("v_pk_fma_f32", {
    float lo =
        std::fma(pkF32(L, 0, false), pkF32(L, 1, false), pkF32(L, 2, false));
    float hi =
        std::fma(pkF32(L, 0, true), pkF32(L, 1, true), pkF32(L, 2, true));
    L.setU64(bitsF32(lo) | (uint64_t(bitsF32(hi)) << 32));
  });
  // Mixed precision FMA: f32 result, or an f16 result into one half of the
  // destination with the other half kept.
  VOP("v_fma_mix_f32",
      L.setU32(bitsF32(std::fma(float(mixSource(L, 0)), float(mixSource(L, 1)),
                                float(mixSource(L, 2))))));
  VOP("v_fma_mixlo_f16", {
    uint32_t old = L.c.readRaw32(L.I.ops[0], L.lane);
    L.setU32((old & 0xffff0000u) | doubleToF16(mixFma(L)));
  });
  VOP("v_fma_mixhi_f16", {
    uint32_t old = L.c.readRaw32(L.I.ops[0], L.lane);
    L.setU32((old & 0x0000ffffu) | uint32_t(doubleToF16(mixFma(L))) << 16);
  });
  VOP("v_pk_mul_f32", {
    float lo = pkF32(L, 0, false) * pkF32(L, 1, false);
    float hi = pkF32(L, 0, true) * pkF32(L, 1, true);
    L.setU64(bitsF32(lo) | (uint64_t(bitsF32(hi)) << 32));
  });
  VOP("v_pk_add_f32", {
    float lo = pkF32(L, 0, false) + pkF32(L, 1, false);
    float hi = pkF32(L, 0, true) + pkF32(L, 1, true);
    L.setU64(bitsF32(lo) | (uint64_t(bitsF32(hi)) << 32));
  });
  VOP("v_pk_mov_b32", {
    // op_sel[0] picks src0's dword for lo, op_sel[1] src1's for hi.
    uint32_t lo = L.c.readRaw32(L.I.src(0), L.lane, L.I.opSel & 1);
    uint32_t hi = L.c.readRaw32(L.I.src(1), L.lane, (L.I.opSel >> 1) & 1);
    L.setU64(lo | (uint64_t(hi) << 32));
  });
#define VOP_PK16F(NAME, ...)                                                   \
  VOP(NAME, {                                                                  \
    uint32_t r = 0;                                                            \
    for (unsigned h = 0; h < 2; ++h) {                                         \
      double a = pkF16(L, 0, h), b = pkF16(L, 1, h);                           \
      double cc = L.I.numSrcs() > 2 ? pkF16(L, 2, h) : 0.0;                    \
      (void)cc;                                                                \
      r |= uint32_t(floatToHalf(float(__VA_ARGS__))) << (16 * h);              \
    }                                                                          \
    L.setU32(r);                                                               \
  })
  VOP_PK16F("v_pk_add_f16", a + b);
  VOP_PK16F("v_pk_mul_f16", a * b);
  VOP_PK16F("v_pk_fma_f16", std::fma(a, b, cc));
  VOP_PK16F("v_pk_max_f16", hwMinMax(L.c, a, b, true));
  VOP_PK16F("v_pk_min_f16", hwMinMax(L.c, a, b, false));
#undef VOP_PK16F
#define VOP_PK16I(NAME, ...)                                                   \
  VOP(NAME, {                                                                  \
    uint32_t r = 0;                                                            \
    for (unsigned h = 0; h < 2; ++h) {                                         \
      uint32_t a = pk16(L, 0, h), b = pk16(L, 1, h);                           \
      r |= (uint32_t(__VA_ARGS__) & 0xffff) << (16 * h);                       \
    }                                                                          \
    L.setU32(r);                                                               \
  })
  VOP_PK16I("v_pk_add_u16", a + b);
  VOP_PK16I("v_pk_sub_u16", a - b);
  VOP_PK16I("v_pk_mul_lo_u16", a * b);
  VOP_PK16I("v_pk_lshlrev_b16", b << (a & 15));
  VOP_PK16I("v_pk_lshrrev_b16", b >> (a & 15));
  VOP_PK16I("v_pk_ashrrev_i16", int16_t(b) >> (a & 15));
  VOP_PK16I("v_pk_max_u16", std::max(a, b));
  VOP_PK16I("v_pk_min_u16", std::min(a, b));
  VOP_PK16I("v_pk_max_i16", std::max(int16_t(a), int16_t(b)));
  VOP_PK16I("v_pk_min_i16", std::min(int16_t(a), int16_t(b)));
#undef VOP_PK16I

  // VOPC.
#define VOPC_ONE(NAME, ISX, ...)                                               \
  t[NAME] = {[](Ctx &c, const Inst &I) -> Error {                              \
               return vopc(c, I, ISX,                                          \
                           [](const Lane &L) { return __VA_ARGS__; });         \
             },                                                                \
             InstClass::VALU}
#define VOPC_INT(OPN, OP)                                                      \
  VOPC_ONE("v_cmp_" OPN "_i32", false, L.i32(0) OP L.i32(1));                  \
  VOPC_ONE("v_cmp_" OPN "_u32", false, L.u32(0) OP L.u32(1));                  \
  VOPC_ONE("v_cmpx_" OPN "_i32", true, L.i32(0) OP L.i32(1));                  \
  VOPC_ONE("v_cmpx_" OPN "_u32", true, L.u32(0) OP L.u32(1));                  \
  VOPC_ONE("v_cmp_" OPN "_i64", false,                                         \
           int64_t(L.u64(0)) OP int64_t(L.u64(1)));                            \
  VOPC_ONE("v_cmp_" OPN "_u64", false, L.u64(0) OP L.u64(1));                  \
  VOPC_ONE("v_cmp_" OPN "_i16", false,                                         \
           int16_t(L.u16(0)) OP int16_t(L.u16(1)));                            \
  VOPC_ONE("v_cmp_" OPN "_u16", false, L.u16(0) OP L.u16(1))
  VOPC_INT("lt", <);
  VOPC_INT("eq", ==);
  VOPC_INT("le", <=);
  VOPC_INT("gt", >);
  VOPC_INT("ne", !=);
  VOPC_INT("ge", >=);
#undef VOPC_INT
  VOPC_ONE("v_cmp_f_i32", false, (void(L), false));
  VOPC_ONE("v_cmp_t_i32", false, (void(L), true));
  VOPC_ONE("v_cmp_f_u32", false, (void(L), false));
  VOPC_ONE("v_cmp_t_u32", false, (void(L), true));
#define VOPC_FLT(OPN, ...)                                                     \
  VOPC_ONE("v_cmp_" OPN "_f32", false,                                         \
           [](float a, float b) { return __VA_ARGS__; }(L.f32(0), L.f32(1)));  \
  VOPC_ONE("v_cmpx_" OPN "_f32", true,                                         \
           [](float a, float b) { return __VA_ARGS__; }(L.f32(0), L.f32(1)));  \
  VOPC_ONE("v_cmp_" OPN "_f64", false, [](double a, double b) {                \
    return __VA_ARGS__;                                                        \
  }(L.f64(0), L.f64(1)));                                                      \
  VOPC_ONE("v_cmp_" OPN "_f16", false,                                         \
           [](float a, float b) { return __VA_ARGS__; }(L.f16(0), L.f16(1)))
  VOPC_FLT("f", (void(a), void(b), false));
  VOPC_FLT("lt", a < b);
  VOPC_FLT("eq", a == b);
  VOPC_FLT("le", a <= b);
  VOPC_FLT("gt", a > b);
  VOPC_FLT("lg", a < b || a > b);
  VOPC_FLT("ge", a >= b);
  VOPC_FLT("o", !std::isnan(a) && !std::isnan(b));
  VOPC_FLT("u", std::isnan(a) || std::isnan(b));
  VOPC_FLT("nge", !(a >= b));
  VOPC_FLT("nlg", !(a < b || a > b));
  VOPC_FLT("ngt", !(a > b));
  VOPC_FLT("nle", !(a <= b));
  VOPC_FLT("neq", !(a == b));
  VOPC_FLT("nlt", !(a < b));
  VOPC_FLT("tru", (void(a), void(b), true));
#undef VOPC_FLT
  VOPC_ONE("v_cmp_class_f32", false,
           cmpClass(L.f32(0), L.u32(1), isSignaling(L.f32(0))));
  VOPC_ONE("v_cmpx_class_f32", true,
           cmpClass(L.f32(0), L.u32(1), isSignaling(L.f32(0))));
  VOPC_ONE("v_cmp_class_f64", false,
           cmpClass(L.f64(0), L.u32(1), isSignaling(L.f64(0))));
#undef VOPC_ONE
}

#undef VOP

} // namespace mlir::mlafp8::emu
