//===- ScalarAluOps.cpp - SALU: SOP2 and SOP1 -----------------------------===//

#include "InstTable.h"

#include "llvm/ADT/bit.h"

using namespace llvm;

namespace mlir::mlafp8::emu {
namespace {

using Ctx = ExecContext;

/// Binary 32-bit SALU op; `f` returns the result and may set SCC.
template <typename F> Error sop2_32(Ctx &c, const Inst &I, F f) {
  uint32_t a = c.readS32(I.src(0)), b = c.readS32(I.src(1));
  bool scc = c.w.scc;
  uint32_t d = f(a, b, scc);
  c.w.scc = scc;
  c.writeS32(I.ops[0], d);
  return Error::success();
}
template <typename F> Error sop2_64(Ctx &c, const Inst &I, F f) {
  uint64_t a = c.readS64(I.src(0)), b = c.readS64(I.src(1));
  bool scc = c.w.scc;
  uint64_t d = f(a, b, scc);
  c.w.scc = scc;
  c.writeS64(I.ops[0], d);
  return Error::success();
}

/// s_*_saveexec_b64: d = EXEC; EXEC = f(src, EXEC); SCC = EXEC != 0.
template <typename F> Error saveExec(Ctx &c, const Inst &I, F f) {
  uint64_t s = c.readS64(I.src(0));
  uint64_t old = c.w.getExec();
  uint64_t e = f(s, old);
  c.writeS64(I.ops[0], old);
  c.w.setExec(e);
  c.w.scc = e != 0;
  return Error::success();
}

/// s_lshl<Shift>_add_u32: (a << Shift) + b; SCC = the carry out.
template <unsigned Shift> Error shiftAdd(Ctx &c, const Inst &I) {
  return sop2_32(c, I, [](uint32_t a, uint32_t b, bool &scc) {
    uint64_t r = (uint64_t(a) << Shift) + b;
    scc = r >> 32;
    return uint32_t(r);
  });
}

/// The 32- and 64-bit rows of a bitwise SOP2: SCC = result != 0.
#define MLAFP8_SLOGIC(NAME, EXPR)                                              \
  InstDef{NAME "_b32", Operands::Def, InstClass::SALU,                         \
          [](Ctx &c, const Inst &I) -> Error {                                 \
            return sop2_32(c, I, [](uint32_t a, uint32_t b, bool &scc) {       \
              uint32_t r = EXPR;                                               \
              scc = r != 0;                                                    \
              return r;                                                        \
            });                                                                \
          }},                                                                  \
      InstDef {                                                                \
    NAME "_b64", Operands::Def, InstClass::SALU,                               \
        [](Ctx &c, const Inst &I) -> Error {                                   \
          return sop2_64(c, I, [](uint64_t a, uint64_t b, bool &scc) {         \
            uint64_t r = EXPR;                                                 \
            scc = r != 0;                                                      \
            return r;                                                          \
          });                                                                  \
        }                                                                      \
  }
/// An s_*_saveexec_b64 row: EXEC = EXPR of the source s and EXEC e.
#define MLAFP8_SAVEEXEC(NAME, EXPR)                                            \
  InstDef {                                                                    \
    NAME, Operands::Def, InstClass::SALU, [](Ctx &c, const Inst &I) -> Error { \
      return saveExec(c, I, [](uint64_t s, uint64_t e) { return EXPR; });      \
    }                                                                          \
  }

const InstDef kScalarAluRows[] = {
    // SOP2, 32-bit.
    {"s_add_u32", Operands::Def, InstClass::SALU,
     [](Ctx &c, const Inst &I) -> Error {
       return sop2_32(c, I, [](uint32_t a, uint32_t b, bool &scc) {
         uint64_t r = uint64_t(a) + b;
         scc = r >> 32;
         return uint32_t(r);
       });
     }},
    {"s_addc_u32", Operands::Def, InstClass::SALU,
     [](Ctx &c, const Inst &I) -> Error {
       return sop2_32(c, I, [](uint32_t a, uint32_t b, bool &scc) {
         uint64_t r = uint64_t(a) + b + scc;
         scc = r >> 32;
         return uint32_t(r);
       });
     }},
    {"s_sub_u32", Operands::Def, InstClass::SALU,
     [](Ctx &c, const Inst &I) -> Error {
       return sop2_32(c, I, [](uint32_t a, uint32_t b, bool &scc) {
         scc = b > a;
         return a - b;
       });
     }},
    {"s_subb_u32", Operands::Def, InstClass::SALU,
     [](Ctx &c, const Inst &I) -> Error {
       return sop2_32(c, I, [](uint32_t a, uint32_t b, bool &scc) {
         uint64_t sub = uint64_t(b) + scc;
         bool borrow = sub > a;
         uint32_t r = uint32_t(a - sub);
         scc = borrow;
         return r;
       });
     }},
    {"s_add_i32", Operands::Def, InstClass::SALU,
     [](Ctx &c, const Inst &I) -> Error {
       return sop2_32(c, I, [](uint32_t a, uint32_t b, bool &scc) {
         uint32_t r = a + b;
         scc = ((a ^ r) & (b ^ r)) >> 31;
         return r;
       });
     }},
    {"s_sub_i32", Operands::Def, InstClass::SALU,
     [](Ctx &c, const Inst &I) -> Error {
       return sop2_32(c, I, [](uint32_t a, uint32_t b, bool &scc) {
         uint32_t r = a - b;
         scc = ((a ^ b) & (a ^ r)) >> 31;
         return r;
       });
     }},
    {"s_absdiff_i32", Operands::Def, InstClass::SALU,
     [](Ctx &c, const Inst &I) -> Error {
       return sop2_32(c, I, [](uint32_t a, uint32_t b, bool &scc) {
         int64_t d = int64_t(int32_t(a)) - int32_t(b);
         uint32_t r = uint32_t(d < 0 ? -d : d);
         scc = r != 0;
         return r;
       });
     }},
    {"s_min_i32", Operands::Def, InstClass::SALU,
     [](Ctx &c, const Inst &I) -> Error {
       return sop2_32(c, I, [](uint32_t a, uint32_t b, bool &scc) {
         scc = int32_t(a) < int32_t(b);
         return scc ? a : b;
       });
     }},
    {"s_min_u32", Operands::Def, InstClass::SALU,
     [](Ctx &c, const Inst &I) -> Error {
       return sop2_32(c, I, [](uint32_t a, uint32_t b, bool &scc) {
         scc = a < b;
         return scc ? a : b;
       });
     }},
    {"s_max_i32", Operands::Def, InstClass::SALU,
     [](Ctx &c, const Inst &I) -> Error {
       return sop2_32(c, I, [](uint32_t a, uint32_t b, bool &scc) {
         scc = int32_t(a) > int32_t(b);
         return scc ? a : b;
       });
     }},
    {"s_max_u32", Operands::Def, InstClass::SALU,
     [](Ctx &c, const Inst &I) -> Error {
       return sop2_32(c, I, [](uint32_t a, uint32_t b, bool &scc) {
         scc = a > b;
         return scc ? a : b;
       });
     }},
    {"s_cselect_b32", Operands::Def, InstClass::SALU,
     [](Ctx &c, const Inst &I) -> Error {
       return sop2_32(
           c, I, [](uint32_t a, uint32_t b, bool &scc) { return scc ? a : b; });
     }},
    {"s_cselect_b64", Operands::Def, InstClass::SALU,
     [](Ctx &c, const Inst &I) -> Error {
       return sop2_64(
           c, I, [](uint64_t a, uint64_t b, bool &scc) { return scc ? a : b; });
     }},
    MLAFP8_SLOGIC("s_and", a &b),
    MLAFP8_SLOGIC("s_or", a | b),
    MLAFP8_SLOGIC("s_xor", a ^ b),
    MLAFP8_SLOGIC("s_andn2", a & ~b),
    MLAFP8_SLOGIC("s_orn2", a | ~b),
    MLAFP8_SLOGIC("s_nand", ~(a &b)),
    MLAFP8_SLOGIC("s_nor", ~(a | b)),
    MLAFP8_SLOGIC("s_xnor", ~(a ^ b)),
    {"s_lshl_b32", Operands::Def, InstClass::SALU,
     [](Ctx &c, const Inst &I) -> Error {
       return sop2_32(c, I, [](uint32_t a, uint32_t b, bool &scc) {
         uint32_t r = a << (b & 31);
         scc = r != 0;
         return r;
       });
     }},
    {"s_lshr_b32", Operands::Def, InstClass::SALU,
     [](Ctx &c, const Inst &I) -> Error {
       return sop2_32(c, I, [](uint32_t a, uint32_t b, bool &scc) {
         uint32_t r = a >> (b & 31);
         scc = r != 0;
         return r;
       });
     }},
    {"s_ashr_i32", Operands::Def, InstClass::SALU,
     [](Ctx &c, const Inst &I) -> Error {
       return sop2_32(c, I, [](uint32_t a, uint32_t b, bool &scc) {
         uint32_t r = uint32_t(int32_t(a) >> (b & 31));
         scc = r != 0;
         return r;
       });
     }},
    {"s_lshl_b64", Operands::Def, InstClass::SALU,
     [](Ctx &c, const Inst &I) -> Error {
       uint64_t r = c.readS64(I.src(0)) << (c.readS32(I.src(1)) & 63);
       c.writeS64(I.ops[0], r);
       c.w.scc = r != 0;
       return Error::success();
     }},
    {"s_lshr_b64", Operands::Def, InstClass::SALU,
     [](Ctx &c, const Inst &I) -> Error {
       uint64_t r = c.readS64(I.src(0)) >> (c.readS32(I.src(1)) & 63);
       c.writeS64(I.ops[0], r);
       c.w.scc = r != 0;
       return Error::success();
     }},
    {"s_ashr_i64", Operands::Def, InstClass::SALU,
     [](Ctx &c, const Inst &I) -> Error {
       uint64_t r =
           uint64_t(int64_t(c.readS64(I.src(0))) >> (c.readS32(I.src(1)) & 63));
       c.writeS64(I.ops[0], r);
       c.w.scc = r != 0;
       return Error::success();
     }},
    {"s_lshl1_add_u32", Operands::Def, InstClass::SALU, shiftAdd<1>},
    {"s_lshl2_add_u32", Operands::Def, InstClass::SALU, shiftAdd<2>},
    {"s_lshl3_add_u32", Operands::Def, InstClass::SALU, shiftAdd<3>},
    {"s_lshl4_add_u32", Operands::Def, InstClass::SALU, shiftAdd<4>},
    {"s_mul_i32", Operands::Def, InstClass::SALU,
     [](Ctx &c, const Inst &I) -> Error {
       return sop2_32(c, I,
                      [](uint32_t a, uint32_t b, bool &) { return a * b; });
     }},
    {"s_mul_hi_u32", Operands::Def, InstClass::SALU,
     [](Ctx &c, const Inst &I) -> Error {
       return sop2_32(c, I, [](uint32_t a, uint32_t b, bool &) {
         return uint32_t((uint64_t(a) * b) >> 32);
       });
     }},
    {"s_mul_hi_i32", Operands::Def, InstClass::SALU,
     [](Ctx &c, const Inst &I) -> Error {
       return sop2_32(c, I, [](uint32_t a, uint32_t b, bool &) {
         return uint32_t(uint64_t(int64_t(int32_t(a)) * int32_t(b)) >> 32);
       });
     }},
    {"s_bfm_b32", Operands::Def, InstClass::SALU,
     [](Ctx &c, const Inst &I) -> Error {
       return sop2_32(c, I, [](uint32_t a, uint32_t b, bool &) {
         return uint32_t(((1ull << (a & 31)) - 1) << (b & 31));
       });
     }},
    {"s_bfm_b64", Operands::Def, InstClass::SALU,
     [](Ctx &c, const Inst &I) -> Error {
       uint32_t a = c.readS32(I.src(0)), b = c.readS32(I.src(1));
       uint64_t m = (a & 63) == 0 ? 0 : (~0ull >> (64 - (a & 63)));
       c.writeS64(I.ops[0], m << (b & 63));
       return Error::success();
     }},
    {"s_bfe_u32", Operands::Def, InstClass::SALU,
     [](Ctx &c, const Inst &I) -> Error {
       return sop2_32(c, I, [](uint32_t a, uint32_t b, bool &scc) {
         unsigned off = b & 31, w = (b >> 16) & 0x7f;
         uint32_t r = w == 0    ? 0
                      : w >= 32 ? a >> off
                                : (a >> off) & ((1u << w) - 1);
         scc = r != 0;
         return r;
       });
     }},
    {"s_bfe_i32", Operands::Def, InstClass::SALU,
     [](Ctx &c, const Inst &I) -> Error {
       return sop2_32(c, I, [](uint32_t a, uint32_t b, bool &scc) {
         unsigned off = b & 31, w = (b >> 16) & 0x7f;
         int32_t r = 0;
         if (w >= 32)
           r = int32_t(a) >> off;
         else if (w)
           r = int32_t(a << (32 - off - std::min(w, 32 - off))) >>
               (32 - std::min(w, 32 - off));
         scc = r != 0;
         return uint32_t(r);
       });
     }},
    {"s_bfe_u64", Operands::Def, InstClass::SALU,
     [](Ctx &c, const Inst &I) -> Error {
       uint64_t a = c.readS64(I.src(0));
       uint32_t b = c.readS32(I.src(1));
       unsigned off = b & 63, w = (b >> 16) & 0x7f;
       uint64_t r = w == 0    ? 0
                    : w >= 64 ? a >> off
                              : (a >> off) & ((1ull << w) - 1);
       c.writeS64(I.ops[0], r);
       c.w.scc = r != 0;
       return Error::success();
     }},
    {"s_pack_ll_b32_b16", Operands::Def, InstClass::SALU,
     [](Ctx &c, const Inst &I) -> Error {
       return sop2_32(c, I, [](uint32_t a, uint32_t b, bool &) {
         return (a & 0xffff) | (b << 16);
       });
     }},
    {"s_pack_lh_b32_b16", Operands::Def, InstClass::SALU,
     [](Ctx &c, const Inst &I) -> Error {
       return sop2_32(c, I, [](uint32_t a, uint32_t b, bool &) {
         return (a & 0xffff) | (b & 0xffff0000u);
       });
     }},
    {"s_pack_hh_b32_b16", Operands::Def, InstClass::SALU,
     [](Ctx &c, const Inst &I) -> Error {
       return sop2_32(c, I, [](uint32_t a, uint32_t b, bool &) {
         return (a >> 16) | (b & 0xffff0000u);
       });
     }},

    // SOP1.
    {"s_mov_b32", Operands::Def, InstClass::SALU,
     [](Ctx &c, const Inst &I) -> Error {
       c.writeS32(I.ops[0], c.readS32(I.src(0)));
       return Error::success();
     }},
    {"s_mov_b64", Operands::Def, InstClass::SALU,
     [](Ctx &c, const Inst &I) -> Error {
       c.writeS64(I.ops[0], c.readS64(I.src(0)));
       return Error::success();
     }},
    {"s_cmov_b32", Operands::Def, InstClass::SALU,
     [](Ctx &c, const Inst &I) -> Error {
       if (c.w.scc)
         c.writeS32(I.ops[0], c.readS32(I.src(0)));
       return Error::success();
     }},
    {"s_cmov_b64", Operands::Def, InstClass::SALU,
     [](Ctx &c, const Inst &I) -> Error {
       if (c.w.scc)
         c.writeS64(I.ops[0], c.readS64(I.src(0)));
       return Error::success();
     }},
    {"s_not_b32", Operands::Def, InstClass::SALU,
     [](Ctx &c, const Inst &I) -> Error {
       uint32_t r = ~c.readS32(I.src(0));
       c.writeS32(I.ops[0], r);
       c.w.scc = r != 0;
       return Error::success();
     }},
    {"s_not_b64", Operands::Def, InstClass::SALU,
     [](Ctx &c, const Inst &I) -> Error {
       uint64_t r = ~c.readS64(I.src(0));
       c.writeS64(I.ops[0], r);
       c.w.scc = r != 0;
       return Error::success();
     }},
    {"s_brev_b32", Operands::Def, InstClass::SALU,
     [](Ctx &c, const Inst &I) -> Error {
       c.writeS32(I.ops[0], llvm::reverseBits(c.readS32(I.src(0))));
       return Error::success();
     }},
    {"s_bcnt1_i32_b32", Operands::Def, InstClass::SALU,
     [](Ctx &c, const Inst &I) -> Error {
       uint32_t r = llvm::popcount(c.readS32(I.src(0)));
       c.writeS32(I.ops[0], r);
       c.w.scc = r != 0;
       return Error::success();
     }},
    {"s_bcnt1_i32_b64", Operands::Def, InstClass::SALU,
     [](Ctx &c, const Inst &I) -> Error {
       uint32_t r = llvm::popcount(c.readS64(I.src(0)));
       c.writeS32(I.ops[0], r);
       c.w.scc = r != 0;
       return Error::success();
     }},
    {"s_ff1_i32_b32", Operands::Def, InstClass::SALU,
     [](Ctx &c, const Inst &I) -> Error {
       uint32_t v = c.readS32(I.src(0));
       c.writeS32(I.ops[0], v ? llvm::countr_zero(v) : ~0u);
       return Error::success();
     }},
    {"s_ff1_i32_b64", Operands::Def, InstClass::SALU,
     [](Ctx &c, const Inst &I) -> Error {
       uint64_t v = c.readS64(I.src(0));
       c.writeS32(I.ops[0], v ? llvm::countr_zero(v) : ~0u);
       return Error::success();
     }},
    {"s_flbit_i32_b32", Operands::Def, InstClass::SALU,
     [](Ctx &c, const Inst &I) -> Error {
       uint32_t v = c.readS32(I.src(0));
       c.writeS32(I.ops[0], v ? llvm::countl_zero(v) : ~0u);
       return Error::success();
     }},
    {"s_sext_i32_i8", Operands::Def, InstClass::SALU,
     [](Ctx &c, const Inst &I) -> Error {
       c.writeS32(I.ops[0], uint32_t(int32_t(int8_t(c.readS32(I.src(0))))));
       return Error::success();
     }},
    {"s_sext_i32_i16", Operands::Def, InstClass::SALU,
     [](Ctx &c, const Inst &I) -> Error {
       c.writeS32(I.ops[0], uint32_t(int32_t(int16_t(c.readS32(I.src(0))))));
       return Error::success();
     }},
    {"s_abs_i32", Operands::Def, InstClass::SALU,
     [](Ctx &c, const Inst &I) -> Error {
       int32_t v = int32_t(c.readS32(I.src(0)));
       uint32_t r = v < 0 ? 0u - uint32_t(v) : uint32_t(v);
       c.writeS32(I.ops[0], r);
       c.w.scc = r != 0;
       return Error::success();
     }},
    {"s_bitset0_b32", Operands::Def, InstClass::SALU,
     [](Ctx &c, const Inst &I) -> Error {
       c.w.sgpr[I.ops[0].reg] &= ~(1u << (c.readS32(I.src(0)) & 31));
       return Error::success();
     }},
    {"s_bitset1_b32", Operands::Def, InstClass::SALU,
     [](Ctx &c, const Inst &I) -> Error {
       c.w.sgpr[I.ops[0].reg] |= 1u << (c.readS32(I.src(0)) & 31);
       return Error::success();
     }},
    {"s_getpc_b64", Operands::Def, InstClass::SALU,
     [](Ctx &c, const Inst &I) -> Error {
       c.writeS64(I.ops[0], I.pc + I.size);
       return Error::success();
     }},
    {"s_setpc_b64", Operands::NoDef, InstClass::Branch,
     [](Ctx &c, const Inst &I) -> Error {
       c.nextPc = c.readS64(I.ops[0]);
       return Error::success();
     }},
    {"s_swappc_b64", Operands::Def, InstClass::Branch,
     [](Ctx &c, const Inst &I) -> Error {
       uint64_t target = c.readS64(I.src(0));
       c.writeS64(I.ops[0], I.pc + I.size);
       c.nextPc = target;
       return Error::success();
     }},
    MLAFP8_SAVEEXEC("s_and_saveexec_b64", s &e),
    MLAFP8_SAVEEXEC("s_or_saveexec_b64", s | e),
    MLAFP8_SAVEEXEC("s_xor_saveexec_b64", s ^ e),
    MLAFP8_SAVEEXEC("s_andn2_saveexec_b64", s & ~e),
    MLAFP8_SAVEEXEC("s_orn2_saveexec_b64", s | ~e),
    MLAFP8_SAVEEXEC("s_nand_saveexec_b64", ~(s &e)),
    MLAFP8_SAVEEXEC("s_nor_saveexec_b64", ~(s | e)),
    MLAFP8_SAVEEXEC("s_xnor_saveexec_b64", ~(s ^ e)),
    MLAFP8_SAVEEXEC("s_andn1_saveexec_b64", ~s &e),
    MLAFP8_SAVEEXEC("s_orn1_saveexec_b64", ~s | e),
};
#undef MLAFP8_SAVEEXEC
#undef MLAFP8_SLOGIC

} // namespace

void registerScalarAluOps(InstTable &t) { t.add(kScalarAluRows); }

} // namespace mlir::mlafp8::emu
