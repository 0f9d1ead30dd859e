//===- VectorIntOps.cpp - VALU moves, cross-lane, integer and bit ops -----===//

#include "InstTable.h"

#include "llvm/ADT/bit.h"

using namespace llvm;

namespace mlir::mlafp8::emu {
namespace {

using Ctx = ExecContext;

/// The median of three integers.
template <typename T> T med3i(T a, T b, T c) {
  return std::max(std::min(a, b), std::min(std::max(a, b), c));
}

/// Byte `sel` of v_perm_b32's 8-byte input, or its constants and sign fills.
uint32_t permByte(uint64_t in, unsigned sel) {
  if (sel >= 13)
    return 0xff;
  if (sel == 12)
    return 0;
  if (sel >= 8)
    return ((in >> (16 * (sel - 8) + 15)) & 1) ? 0xff : 0;
  return (in >> (8 * sel)) & 0xff;
}

/// gfx950 v_bitop3: every result bit is the truth table `table` indexed by
/// the source bits (src0 << 2 | src1 << 1 | src2); LLVM's selection builds
/// the table from src0 = 0xf0, src1 = 0xcc, src2 = 0xaa.
uint32_t bitop3(uint8_t table, uint32_t a, uint32_t b, uint32_t c) {
  uint32_t r = 0;
  for (unsigned i = 0; i < 8; ++i)
    if ((table >> i) & 1)
      r |= ((i & 4) ? a : ~a) & ((i & 2) ? b : ~b) & ((i & 1) ? c : ~c);
  return r;
}

/// v_permlane{16,32}_swap_b32 (gfx950): lanes with bit `Stride` set trade
/// their vdst value with vsrc of the lane `Stride` below.
template <unsigned Stride> Error permlaneSwap(Ctx &c, const Inst &I) {
  uint64_t e = c.w.getExec();
  for (unsigned l = 0; l < 64; ++l)
    if ((l & Stride) && ((e >> l) & 1))
      std::swap(c.vreg(I.ops[0], l), c.vreg(I.src(0), l - Stride));
  return Error::success();
}

/// A carry form: ops[1] is the carry-out mask, src(2) the carry-in mask.
#define MLAFP8_CARRY(NAME, ...)                                                \
  {NAME, Operands::TwoDefs, InstClass::VALU,                                   \
   [](Ctx &c, const Inst &I) -> Error {                                        \
     uint64_t carry = 0;                                                       \
     uint64_t cin = I.numSrcs() > 2 ? c.readS64(I.src(2)) : 0;                 \
     (void)cin;                                                                \
     forEachLane(c, I, [&](const Lane &L) {                                    \
       uint64_t a = L.u32(0), b = L.u32(1);                                    \
       uint64_t ci = (cin >> L.lane) & 1;                                      \
       (void)ci;                                                               \
       uint64_t r = __VA_ARGS__;                                               \
       L.setU32(uint32_t(r));                                                  \
       if (r >> 32)                                                            \
         carry |= 1ull << L.lane;                                              \
     });                                                                       \
     c.writeS64(I.ops[1], carry);                                              \
     return Error::success();                                                  \
   }}

const InstDef kVectorIntRows[] = {
    // Moves and cross-lane.
    MLAFP8_LANEWISE("v_mov_b32", Def, L.setU32(L.u32(0))),
    MLAFP8_LANEWISE("v_mov_b64", Def, L.setU64(L.u64(0))),
    MLAFP8_LANEWISE("v_accvgpr_write_b32", Def, L.setU32(L.u32(0))),
    MLAFP8_LANEWISE("v_accvgpr_read_b32", Def, L.setU32(L.u32(0))),
    MLAFP8_LANEWISE("v_accvgpr_mov_b32", Def, L.setU32(L.u32(0))),
    MLAFP8_LANEWISE("v_nop", Def, (void)L),
    {"v_readfirstlane_b32", Operands::Def, InstClass::VALU,
     [](Ctx &c, const Inst &I) -> Error {
       uint64_t e = c.w.getExec();
       unsigned lane = e ? __builtin_ctzll(e) : 0;
       c.writeS32(I.ops[0], c.readRaw32(I.src(0), lane));
       return Error::success();
     }},
    {"v_readlane_b32", Operands::Def, InstClass::VALU,
     [](Ctx &c, const Inst &I) -> Error {
       unsigned lane = c.readS32(I.src(1)) & 63;
       c.writeS32(I.ops[0], c.readRaw32(I.src(0), lane));
       return Error::success();
     }},
    {"v_writelane_b32", Operands::Def, InstClass::VALU,
     [](Ctx &c, const Inst &I) -> Error {
       unsigned lane = c.readS32(I.src(1)) & 63;
       c.vreg(I.ops[0], lane) = c.readS32(I.src(0));
       return Error::success();
     }},
    {"v_swap_b32", Operands::Def, InstClass::VALU,
     [](Ctx &c, const Inst &I) -> Error {
       uint64_t e = c.w.getExec();
       for (unsigned l = 0; l < 64; ++l)
         if ((e >> l) & 1)
           std::swap(c.vreg(I.ops[0], l), c.vreg(I.ops[1], l));
       return Error::success();
     }},

    // gfx950 v_permlane{16,32}_swap_b32 vdst, vsrc: odd rows of vdst trade
    // places with even rows of vsrc (16), or rows 2-3 of vdst with rows 0-1 of
    // vsrc (32); both registers change.
    {"v_permlane16_swap_b32", Operands::Def, InstClass::VALU, permlaneSwap<16>},
    {"v_permlane32_swap_b32", Operands::Def, InstClass::VALU, permlaneSwap<32>},
    {"v_mbcnt_lo_u32_b32", Operands::Def, InstClass::VALU,
     [](Ctx &c, const Inst &I) -> Error {
       forEachLane(c, I, [&](const Lane &L) {
         uint32_t m = L.lane >= 32 ? ~0u : uint32_t((1ull << L.lane) - 1);
         L.setU32(llvm::popcount(L.u32(0) & m) + L.u32(1));
       });
       return Error::success();
     }},
    {"v_mbcnt_hi_u32_b32", Operands::Def, InstClass::VALU,
     [](Ctx &c, const Inst &I) -> Error {
       forEachLane(c, I, [&](const Lane &L) {
         uint32_t m = L.lane < 32 ? 0 : uint32_t((1ull << (L.lane - 32)) - 1);
         L.setU32(llvm::popcount(L.u32(0) & m) + L.u32(1));
       });
       return Error::success();
     }},

    // Integer.
    MLAFP8_LANEWISE("v_add_u32", Def, L.setU32(L.u32(0) + L.u32(1))),
    MLAFP8_LANEWISE("v_sub_u32", Def, L.setU32(L.u32(0) - L.u32(1))),
    MLAFP8_LANEWISE("v_subrev_u32", Def, L.setU32(L.u32(1) - L.u32(0))),
    MLAFP8_LANEWISE("v_add_i32", Def, L.setU32(L.u32(0) + L.u32(1))),
    MLAFP8_LANEWISE("v_sub_i32", Def, L.setU32(L.u32(0) - L.u32(1))),
    MLAFP8_LANEWISE("v_and_b32", Def, L.setU32(L.u32(0) & L.u32(1))),
    MLAFP8_LANEWISE("v_or_b32", Def, L.setU32(L.u32(0) | L.u32(1))),
    MLAFP8_LANEWISE("v_xor_b32", Def, L.setU32(L.u32(0) ^ L.u32(1))),
    MLAFP8_LANEWISE("v_xnor_b32", Def, L.setU32(~(L.u32(0) ^ L.u32(1)))),
    MLAFP8_LANEWISE("v_not_b32", Def, L.setU32(~L.u32(0))),
    MLAFP8_LANEWISE("v_bfrev_b32", Def, L.setU32(llvm::reverseBits(L.u32(0)))),
    MLAFP8_LANEWISE("v_ffbh_u32", Def,
                    L.setU32(L.u32(0) ? llvm::countl_zero(L.u32(0)) : ~0u)),
    MLAFP8_LANEWISE("v_ffbl_b32", Def,
                    L.setU32(L.u32(0) ? llvm::countr_zero(L.u32(0)) : ~0u)),
    MLAFP8_LANEWISE("v_ffbh_i32", Def,
                    {
                      int32_t v = L.i32(0);
                      uint32_t x = v < 0 ? ~uint32_t(v) : uint32_t(v);
                      L.setU32(v == 0 || v == -1 ? ~0u : llvm::countl_zero(x));
                    }),
    MLAFP8_LANEWISE("v_lshlrev_b32", Def,
                    L.setU32(L.u32(1) << (L.u32(0) & 31))),
    MLAFP8_LANEWISE("v_lshrrev_b32", Def,
                    L.setU32(L.u32(1) >> (L.u32(0) & 31))),
    MLAFP8_LANEWISE("v_ashrrev_i32", Def,
                    L.setU32(uint32_t(L.i32(1) >> (L.u32(0) & 31)))),
    // 16-bit shifts: the count is src0's low 4 bits; gfx9 zeroes the high
    // half of the result (LLVM's zeroesHigh16BitsOfDest).
    MLAFP8_LANEWISE("v_lshlrev_b16", Def,
                    L.setU16(uint16_t(L.u16(1) << (L.u16(0) & 15)))),
    MLAFP8_LANEWISE("v_lshlrev_b64", Def,
                    L.setU64(L.u64(1) << (L.u32(0) & 63))),
    MLAFP8_LANEWISE("v_lshrrev_b64", Def,
                    L.setU64(L.u64(1) >> (L.u32(0) & 63))),
    MLAFP8_LANEWISE("v_ashrrev_i64", Def,
                    L.setU64(uint64_t(int64_t(L.u64(1)) >> (L.u32(0) & 63)))),
    MLAFP8_LANEWISE("v_min_i32", Def,
                    L.setU32(uint32_t(std::min(L.i32(0), L.i32(1))))),
    MLAFP8_LANEWISE("v_max_i32", Def,
                    L.setU32(uint32_t(std::max(L.i32(0), L.i32(1))))),
    MLAFP8_LANEWISE("v_min_u32", Def, L.setU32(std::min(L.u32(0), L.u32(1)))),
    MLAFP8_LANEWISE("v_max_u32", Def, L.setU32(std::max(L.u32(0), L.u32(1)))),
    MLAFP8_LANEWISE(
        "v_min3_i32", Def,
        L.setU32(uint32_t(std::min({L.i32(0), L.i32(1), L.i32(2)})))),
    MLAFP8_LANEWISE(
        "v_max3_i32", Def,
        L.setU32(uint32_t(std::max({L.i32(0), L.i32(1), L.i32(2)})))),
    MLAFP8_LANEWISE("v_min3_u32", Def,
                    L.setU32(std::min({L.u32(0), L.u32(1), L.u32(2)}))),
    MLAFP8_LANEWISE("v_max3_u32", Def,
                    L.setU32(std::max({L.u32(0), L.u32(1), L.u32(2)}))),
    MLAFP8_LANEWISE("v_med3_i32", Def,
                    L.setU32(uint32_t(med3i(L.i32(0), L.i32(1), L.i32(2))))),
    MLAFP8_LANEWISE("v_med3_u32", Def,
                    L.setU32(med3i(L.u32(0), L.u32(1), L.u32(2)))),
    MLAFP8_LANEWISE("v_mul_lo_u32", Def, L.setU32(L.u32(0) * L.u32(1))),
    MLAFP8_LANEWISE("v_mul_hi_u32", Def,
                    L.setU32(uint32_t((uint64_t(L.u32(0)) * L.u32(1)) >> 32))),
    MLAFP8_LANEWISE(
        "v_mul_hi_i32", Def,
        L.setU32(uint32_t(uint64_t(int64_t(L.i32(0)) * L.i32(1)) >> 32))),
    MLAFP8_LANEWISE("v_mul_u32_u24", Def,
                    L.setU32((L.u32(0) & 0xffffff) * (L.u32(1) & 0xffffff))),
    MLAFP8_LANEWISE(
        "v_mul_hi_u32_u24", Def,
        L.setU32(uint32_t(
            (uint64_t(L.u32(0) & 0xffffff) * (L.u32(1) & 0xffffff)) >> 32))),
    MLAFP8_LANEWISE("v_mul_i32_i24", Def,
                    {
                      int64_t a = int32_t(L.u32(0) << 8) >> 8,
                              b = int32_t(L.u32(1) << 8) >> 8;
                      L.setU32(uint32_t(a * b));
                    }),
    MLAFP8_LANEWISE(
        "v_mad_u32_u24", Def,
        L.setU32((L.u32(0) & 0xffffff) * (L.u32(1) & 0xffffff) + L.u32(2))),
    MLAFP8_LANEWISE("v_mad_i32_i24", Def,
                    {
                      int64_t a = int32_t(L.u32(0) << 8) >> 8,
                              b = int32_t(L.u32(1) << 8) >> 8;
                      L.setU32(uint32_t(a * b) + L.u32(2));
                    }),
    MLAFP8_LANEWISE("v_bfe_u32", Def,
                    {
                      unsigned off = L.u32(1) & 31, w = L.u32(2) & 31;
                      L.setU32(w == 0 ? 0
                                      : (L.u32(0) >> off) & ((1u << w) - 1));
                    }),
    MLAFP8_LANEWISE("v_bfe_i32", Def,
                    {
                      unsigned off = L.u32(1) & 31, w = L.u32(2) & 31;
                      uint32_t v =
                          w == 0 ? 0 : (L.u32(0) >> off) & ((1u << w) - 1);
                      L.setU32(w == 0 ? 0
                                      : uint32_t(int32_t(v << (32 - w)) >>
                                                 (32 - w)));
                    }),
    MLAFP8_LANEWISE("v_bfi_b32", Def,
                    L.setU32((L.u32(0) & L.u32(1)) | (~L.u32(0) & L.u32(2)))),
    MLAFP8_LANEWISE(
        "v_bfm_b32", Def,
        L.setU32(uint32_t(((1ull << (L.u32(0) & 31)) - 1) << (L.u32(1) & 31)))),
    MLAFP8_LANEWISE("v_alignbit_b32", Def,
                    L.setU32(uint32_t(((uint64_t(L.u32(0)) << 32) | L.u32(1)) >>
                                      (L.u32(2) & 31)))),
    MLAFP8_LANEWISE("v_alignbyte_b32", Def,
                    L.setU32(uint32_t(((uint64_t(L.u32(0)) << 32) | L.u32(1)) >>
                                      (8 * (L.u32(2) & 3))))),
    MLAFP8_LANEWISE("v_add3_u32", Def,
                    L.setU32(L.u32(0) + L.u32(1) + L.u32(2))),
    MLAFP8_LANEWISE("v_or3_b32", Def, L.setU32(L.u32(0) | L.u32(1) | L.u32(2))),
    MLAFP8_LANEWISE("v_and_or_b32", Def,
                    L.setU32((L.u32(0) & L.u32(1)) | L.u32(2))),
    MLAFP8_LANEWISE("v_lshl_or_b32", Def,
                    L.setU32((L.u32(0) << (L.u32(1) & 31)) | L.u32(2))),
    MLAFP8_LANEWISE("v_lshl_add_u32", Def,
                    L.setU32((L.u32(0) << (L.u32(1) & 31)) + L.u32(2))),
    MLAFP8_LANEWISE("v_add_lshl_u32", Def,
                    L.setU32((L.u32(0) + L.u32(1)) << (L.u32(2) & 31))),
    MLAFP8_LANEWISE("v_xad_u32", Def,
                    L.setU32((L.u32(0) ^ L.u32(1)) + L.u32(2))),
    MLAFP8_LANEWISE("v_lshl_add_u64", Def,
                    L.setU64((L.u64(0) << (L.u32(1) & 63)) + L.u64(2))),
    MLAFP8_LANEWISE("v_perm_b32", Def,
                    {
                      uint64_t in = (uint64_t(L.u32(0)) << 32) | L.u32(1);
                      uint32_t sel = L.u32(2), r = 0;
                      for (unsigned i = 0; i < 4; ++i)
                        r |= permByte(in, (sel >> (8 * i)) & 0xff) << (8 * i);
                      L.setU32(r);
                    }),

    MLAFP8_LANEWISE("v_bitop3_b32", Def,
                    L.setU32(bitop3(L.I.bitop3, L.u32(0), L.u32(1), L.u32(2)))),
    // The 16-bit form reads op_sel-selected halves and writes one half (the
    // high one with op_sel's destination bit). What happens to the other half
    // is not stated publicly, and LLVM does not list V_BITOP3_B16 among the
    // gfx9 ops that zero it (GCNSubtarget::zeroesHigh16BitsOfDest); the
    // emulator zeroes it as for other gfx9 16-bit ops (Lane::setU16).
    // Triton's gfx950 code reads only the written half.
    MLAFP8_LANEWISE(
        "v_bitop3_b16", Def,
        L.setU16(uint16_t(bitop3(L.I.bitop3, L.u16(0), L.u16(1), L.u16(2))))),
    MLAFP8_LANEWISE("v_bcnt_u32_b32", Def,
                    L.setU32(llvm::popcount(L.u32(0)) + L.u32(1))),
    MLAFP8_LANEWISE("v_cvt_f32_ubyte0", Def, L.setF32(float(L.u32(0) & 0xff))),
    MLAFP8_LANEWISE("v_cvt_f32_ubyte1", Def,
                    L.setF32(float((L.u32(0) >> 8) & 0xff))),
    MLAFP8_LANEWISE("v_cvt_f32_ubyte2", Def,
                    L.setF32(float((L.u32(0) >> 16) & 0xff))),
    MLAFP8_LANEWISE("v_cvt_f32_ubyte3", Def, L.setF32(float(L.u32(0) >> 24))),
    MLAFP8_LANEWISE("v_mad_u64_u32", TwoDefs,
                    {
                      uint64_t r = uint64_t(L.u32(0)) * L.u32(1);
                      uint64_t acc = L.u64(2);
                      uint64_t sum = r + acc;
                      L.setU64(sum);
                      (void)(sum < r);
                    }),
    MLAFP8_LANEWISE("v_mad_i64_i32", TwoDefs,
                    {
                      int64_t r = int64_t(L.i32(0)) * L.i32(1);
                      L.setU64(uint64_t(r) + L.u64(2));
                    }),
    MLAFP8_CARRY("v_add_co_u32", a + b),
    MLAFP8_CARRY("v_addc_co_u32", a + b + ci),
    MLAFP8_CARRY("v_sub_co_u32", (a - b) & 0x1ffffffffull),
    MLAFP8_CARRY("v_subrev_co_u32", (b - a) & 0x1ffffffffull),
    MLAFP8_CARRY("v_subb_co_u32", (a - b - ci) & 0x1ffffffffull),
    MLAFP8_CARRY("v_subbrev_co_u32", (b - a - ci) & 0x1ffffffffull),
    {"v_cndmask_b32", Operands::Def, InstClass::VALU,
     [](Ctx &c, const Inst &I) -> Error {
       uint64_t mask = c.readS64(I.src(2));
       forEachLane(c, I, [&](const Lane &L) {
         bool sel = (mask >> L.lane) & 1;
         L.setU32(bitsF32(L.f32(sel ? 1 : 0)));
       });
       return Error::success();
     }},
#undef MLAFP8_CARRY
};

} // namespace

void registerVectorIntOps(InstTable &t) { t.add(kVectorIntRows); }

} // namespace mlir::mlafp8::emu
