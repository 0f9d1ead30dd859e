//===- ScalarOps.cpp - SALU, SOPP control flow and SMEM -------------------===//

#include "Internal.h"

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
template <typename F> Error sopc(Ctx &c, const Inst &I, F f) {
  c.w.scc = f(c.readS32(I.src(0)), c.readS32(I.src(1)));
  return Error::success();
}

int32_t simm16(const Operand &op) { return int32_t(int16_t(uint16_t(op.imm))); }

Error branchIf(Ctx &c, const Inst &I, bool taken) {
  if (taken)
    c.nextPc = I.pc + 4 + int64_t(simm16(I.ops[0])) * 4;
  return Error::success();
}

/// The MODE / other hardware registers that s_getreg/s_setreg address.
uint32_t *hwReg(Ctx &c, const Operand &op) {
  return op.hwId == 1 ? &c.w.mode : nullptr;
}

Error setReg(Ctx &c, const Inst &I, uint32_t value) {
  const Operand &h = I.src(0);
  uint32_t *r = hwReg(c, h);
  if (!r)
    return c.fail(I, "s_setreg of a hardware register other than MODE is "
                     "not modelled");
  uint32_t mask = (h.hwSize >= 32 ? ~0u : ((1u << h.hwSize) - 1)) << h.hwOffset;
  *r = (*r & ~mask) | ((value << h.hwOffset) & mask);
  return Error::success();
}

/// Width in dwords of an SMEM load mnemonic.
unsigned smemDwords(StringRef m) {
  if (m.ends_with("x16"))
    return 16;
  if (m.ends_with("x8"))
    return 8;
  if (m.ends_with("x4"))
    return 4;
  if (m.ends_with("x2"))
    return 2;
  return 1;
}

Error sLoad(Ctx &c, const Inst &I) {
  const Operand &dst = I.ops[0];
  unsigned n = smemDwords(I.mnemonic);
  uint64_t off = 0;
  if (I.numSrcs() > 1)
    off = I.src(1).kind == OpKind::Imm ? uint64_t(int64_t(I.src(1).imm))
                                       : c.readS32(I.src(1));
  off += int64_t(I.offset);
  bool isBuffer = StringRef(I.mnemonic).starts_with("s_buffer");
  uint64_t addr;
  if (isBuffer) {
    unsigned r = I.src(0).reg;
    uint64_t base = c.w.sgpr[r] | (uint64_t(c.w.sgpr[r + 1] & 0xffff) << 32);
    uint32_t numRecords = c.w.sgpr[r + 2];
    addr = base + (off & ~3ull);
    for (unsigned i = 0; i < n; ++i) {
      uint64_t o = (off & ~3ull) + 4 * i;
      uint32_t v = 0;
      if (o + 4 <= numRecords) {
        auto p = c.global(I, 0, base + o, 4, false);
        if (!p)
          return p.takeError();
        std::memcpy(&v, *p, 4);
      }
      c.w.sgpr[dst.reg + i] = v;
    }
    c.stats.bytesLoaded += 4 * n;
    return Error::success();
  }
  addr = (c.readS64(I.src(0)) + off) & ~3ull;
  auto p = c.global(I, 0, addr, 4 * n, false);
  if (!p)
    return p.takeError();
  std::memcpy(&c.w.sgpr[dst.reg], *p, 4 * n);
  c.stats.bytesLoaded += 4 * n;
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

} // namespace

void registerScalarOps(OpTable &t) {
  auto salu = [&](const char *name, Handler h) {
    t[name] = {h, InstClass::SALU};
  };
  auto br = [&](const char *name, Handler h) {
    t[name] = {h, InstClass::Branch};
  };
  auto nop = [](Ctx &, const Inst &) -> Error { return Error::success(); };

  // SOP2, 32-bit.
  salu("s_add_u32", [](Ctx &c, const Inst &I) -> Error {
    return sop2_32(c, I, [](uint32_t a, uint32_t b, bool &scc) {
      uint64_t r = uint64_t(a) + b;
      scc = r >> 32;
      return uint32_t(r);
    });
  });
  salu("s_addc_u32", [](Ctx &c, const Inst &I) -> Error {
    return sop2_32(c, I, [](uint32_t a, uint32_t b, bool &scc) {
      uint64_t r = uint64_t(a) + b + scc;
      scc = r >> 32;
      return uint32_t(r);
    });
  });
  salu("s_sub_u32", [](Ctx &c, const Inst &I) -> Error {
    return sop2_32(c, I, [](uint32_t a, uint32_t b, bool &scc) {
      scc = b > a;
      return a - b;
    });
  });
  salu("s_subb_u32", [](Ctx &c, const Inst &I) -> Error {
    return sop2_32(c, I, [](uint32_t a, uint32_t b, bool &scc) {
      uint64_t sub = uint64_t(b) + scc;
      bool borrow = sub > a;
      uint32_t r = uint32_t(a - sub);
      scc = borrow;
      return r;
    });
  });
  salu("s_add_i32", [](Ctx &c, const Inst &I) -> Error {
    return sop2_32(c, I, [](uint32_t a, uint32_t b, bool &scc) {
      uint32_t r = a + b;
      scc = ((a ^ r) & (b ^ r)) >> 31;
      return r;
    });
  });
  salu("s_sub_i32", [](Ctx &c, const Inst &I) -> Error {
    return sop2_32(c, I, [](uint32_t a, uint32_t b, bool &scc) {
      uint32_t r = a - b;
      scc = ((a ^ b) & (a ^ r)) >> 31;
      return r;
    });
  });
  salu("s_absdiff_i32", [](Ctx &c, const Inst &I) -> Error {
    return sop2_32(c, I, [](uint32_t a, uint32_t b, bool &scc) {
      int64_t d = int64_t(int32_t(a)) - int32_t(b);
      uint32_t r = uint32_t(d < 0 ? -d : d);
      scc = r != 0;
      return r;
    });
  });
  salu("s_min_i32", [](Ctx &c, const Inst &I) -> Error {
    return sop2_32(c, I, [](uint32_t a, uint32_t b, bool &scc) {
      scc = int32_t(a) < int32_t(b);
      return scc ? a : b;
    });
  });
  salu("s_min_u32", [](Ctx &c, const Inst &I) -> Error {
    return sop2_32(c, I, [](uint32_t a, uint32_t b, bool &scc) {
      scc = a < b;
      return scc ? a : b;
    });
  });
  salu("s_max_i32", [](Ctx &c, const Inst &I) -> Error {
    return sop2_32(c, I, [](uint32_t a, uint32_t b, bool &scc) {
      scc = int32_t(a) > int32_t(b);
      return scc ? a : b;
    });
  });
  salu("s_max_u32", [](Ctx &c, const Inst &I) -> Error {
    return sop2_32(c, I, [](uint32_t a, uint32_t b, bool &scc) {
      scc = a > b;
      return scc ? a : b;
    });
  });
  salu("s_cselect_b32", [](Ctx &c, const Inst &I) -> Error {
    return sop2_32(
        c, I, [](uint32_t a, uint32_t b, bool &scc) { return scc ? a : b; });
  });
  salu("s_cselect_b64", [](Ctx &c, const Inst &I) -> Error {
    return sop2_64(
        c, I, [](uint64_t a, uint64_t b, bool &scc) { return scc ? a : b; });
  });
#define MLAFP8_SLOGIC(NAME, EXPR)                                              \
  salu(NAME "_b32", [](Ctx &c, const Inst &I) -> Error {                       \
    return sop2_32(c, I, [](uint32_t a, uint32_t b, bool &scc) {               \
      uint32_t r = EXPR;                                                       \
      scc = r != 0;                                                            \
      return r;                                                                \
    });                                                                        \
  });                                                                          \
  salu(NAME "_b64", [](Ctx &c, const Inst &I) -> Error {                       \
    return sop2_64(c, I, [](uint64_t a, uint64_t b, bool &scc) {               \
      uint64_t r = EXPR;                                                       \
      scc = r != 0;                                                            \
      return r;                                                                \
    });                                                                        \
  });
  MLAFP8_SLOGIC("s_and", a & b)
  MLAFP8_SLOGIC("s_or", a | b)
  MLAFP8_SLOGIC("s_xor", a ^ b)
  MLAFP8_SLOGIC("s_andn2", a & ~b)
  MLAFP8_SLOGIC("s_orn2", a | ~b)
  MLAFP8_SLOGIC("s_nand", ~(a & b))
  MLAFP8_SLOGIC("s_nor", ~(a | b))
  MLAFP8_SLOGIC("s_xnor", ~(a ^ b))
#undef MLAFP8_SLOGIC
  salu("s_lshl_b32", [](Ctx &c, const Inst &I) -> Error {
    return sop2_32(c, I, [](uint32_t a, uint32_t b, bool &scc) {
      uint32_t r = a << (b & 31);
      scc = r != 0;
      return r;
    });
  });
  salu("s_lshr_b32", [](Ctx &c, const Inst &I) -> Error {
    return sop2_32(c, I, [](uint32_t a, uint32_t b, bool &scc) {
      uint32_t r = a >> (b & 31);
      scc = r != 0;
      return r;
    });
  });
  salu("s_ashr_i32", [](Ctx &c, const Inst &I) -> Error {
    return sop2_32(c, I, [](uint32_t a, uint32_t b, bool &scc) {
      uint32_t r = uint32_t(int32_t(a) >> (b & 31));
      scc = r != 0;
      return r;
    });
  });
  salu("s_lshl_b64", [](Ctx &c, const Inst &I) -> Error {
    uint64_t r = c.readS64(I.src(0)) << (c.readS32(I.src(1)) & 63);
    c.writeS64(I.ops[0], r);
    c.w.scc = r != 0;
    return Error::success();
  });
  salu("s_lshr_b64", [](Ctx &c, const Inst &I) -> Error {
    uint64_t r = c.readS64(I.src(0)) >> (c.readS32(I.src(1)) & 63);
    c.writeS64(I.ops[0], r);
    c.w.scc = r != 0;
    return Error::success();
  });
  salu("s_ashr_i64", [](Ctx &c, const Inst &I) -> Error {
    uint64_t r =
        uint64_t(int64_t(c.readS64(I.src(0))) >> (c.readS32(I.src(1)) & 63));
    c.writeS64(I.ops[0], r);
    c.w.scc = r != 0;
    return Error::success();
  });
  salu("s_lshl1_add_u32", [](Ctx &c, const Inst &I) -> Error {
    return sop2_32(c, I, [](uint32_t a, uint32_t b, bool &scc) {
      uint64_t r = (uint64_t(a) << 1) + b;
      scc = r >> 32;
      return uint32_t(r);
    });
  });
  salu("s_lshl2_add_u32", [](Ctx &c, const Inst &I) -> Error {
    return sop2_32(c, I, [](uint32_t a, uint32_t b, bool &scc) {
      uint64_t r = (uint64_t(a) << 2) + b;
      scc = r >> 32;
      return uint32_t(r);
    });
  });
  salu("s_lshl3_add_u32", [](Ctx &c, const Inst &I) -> Error {
    return sop2_32(c, I, [](uint32_t a, uint32_t b, bool &scc) {
      uint64_t r = (uint64_t(a) << 3) + b;
      scc = r >> 32;
      return uint32_t(r);
    });
  });
  salu("s_lshl4_add_u32", [](Ctx &c, const Inst &I) -> Error {
    return sop2_32(c, I, [](uint32_t a, uint32_t b, bool &scc) {
      uint64_t r = (uint64_t(a) << 4) + b;
      scc = r >> 32;
      return uint32_t(r);
    });
  });
  salu("s_mul_i32", [](Ctx &c, const Inst &I) -> Error {
    return sop2_32(c, I, [](uint32_t a, uint32_t b, bool &) { return a * b; });
  });
  salu("s_mul_hi_u32", [](Ctx &c, const Inst &I) -> Error {
    return sop2_32(c, I, [](uint32_t a, uint32_t b, bool &) {
      return uint32_t((uint64_t(a) * b) >> 32);
    });
  });
  salu("s_mul_hi_i32", [](Ctx &c, const Inst &I) -> Error {
    return sop2_32(c, I, [](uint32_t a, uint32_t b, bool &) {
      return uint32_t(uint64_t(int64_t(int32_t(a)) * int32_t(b)) >> 32);
    });
  });
  salu("s_bfm_b32", [](Ctx &c, const Inst &I) -> Error {
    return sop2_32(c, I, [](uint32_t a, uint32_t b, bool &) {
      return uint32_t(((1ull << (a & 31)) - 1) << (b & 31));
    });
  });
  salu("s_bfm_b64", [](Ctx &c, const Inst &I) -> Error {
    uint32_t a = c.readS32(I.src(0)), b = c.readS32(I.src(1));
    uint64_t m = (a & 63) == 0 ? 0 : (~0ull >> (64 - (a & 63)));
    c.writeS64(I.ops[0], m << (b & 63));
    return Error::success();
  });
  salu("s_bfe_u32", [](Ctx &c, const Inst &I) -> Error {
    return sop2_32(c, I, [](uint32_t a, uint32_t b, bool &scc) {
      unsigned off = b & 31, w = (b >> 16) & 0x7f;
      uint32_t r = w == 0    ? 0
                   : w >= 32 ? a >> off
                             : (a >> off) & ((1u << w) - 1);
      scc = r != 0;
      return r;
    });
  });
  salu("s_bfe_i32", [](Ctx &c, const Inst &I) -> Error {
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
  });
  salu("s_bfe_u64", [](Ctx &c, const Inst &I) -> Error {
    uint64_t a = c.readS64(I.src(0));
    uint32_t b = c.readS32(I.src(1));
    unsigned off = b & 63, w = (b >> 16) & 0x7f;
    uint64_t r = w == 0    ? 0
                 : w >= 64 ? a >> off
                           : (a >> off) & ((1ull << w) - 1);
    c.writeS64(I.ops[0], r);
    c.w.scc = r != 0;
    return Error::success();
  });
  salu("s_pack_ll_b32_b16", [](Ctx &c, const Inst &I) -> Error {
    return sop2_32(c, I, [](uint32_t a, uint32_t b, bool &) {
      return (a & 0xffff) | (b << 16);
    });
  });
  salu("s_pack_lh_b32_b16", [](Ctx &c, const Inst &I) -> Error {
    return sop2_32(c, I, [](uint32_t a, uint32_t b, bool &) {
      return (a & 0xffff) | (b & 0xffff0000u);
    });
  });
  salu("s_pack_hh_b32_b16", [](Ctx &c, const Inst &I) -> Error {
    return sop2_32(c, I, [](uint32_t a, uint32_t b, bool &) {
      return (a >> 16) | (b & 0xffff0000u);
    });
  });

  // SOP1.
  salu("s_mov_b32", [](Ctx &c, const Inst &I) -> Error {
    c.writeS32(I.ops[0], c.readS32(I.src(0)));
    return Error::success();
  });
  salu("s_mov_b64", [](Ctx &c, const Inst &I) -> Error {
    c.writeS64(I.ops[0], c.readS64(I.src(0)));
    return Error::success();
  });
  salu("s_cmov_b32", [](Ctx &c, const Inst &I) -> Error {
    if (c.w.scc)
      c.writeS32(I.ops[0], c.readS32(I.src(0)));
    return Error::success();
  });
  salu("s_cmov_b64", [](Ctx &c, const Inst &I) -> Error {
    if (c.w.scc)
      c.writeS64(I.ops[0], c.readS64(I.src(0)));
    return Error::success();
  });
  salu("s_not_b32", [](Ctx &c, const Inst &I) -> Error {
    uint32_t r = ~c.readS32(I.src(0));
    c.writeS32(I.ops[0], r);
    c.w.scc = r != 0;
    return Error::success();
  });
  salu("s_not_b64", [](Ctx &c, const Inst &I) -> Error {
    uint64_t r = ~c.readS64(I.src(0));
    c.writeS64(I.ops[0], r);
    c.w.scc = r != 0;
    return Error::success();
  });
  salu("s_brev_b32", [](Ctx &c, const Inst &I) -> Error {
    c.writeS32(I.ops[0], llvm::reverseBits(c.readS32(I.src(0))));
    return Error::success();
  });
  salu("s_bcnt1_i32_b32", [](Ctx &c, const Inst &I) -> Error {
    uint32_t r = llvm::popcount(c.readS32(I.src(0)));
    c.writeS32(I.ops[0], r);
    c.w.scc = r != 0;
    return Error::success();
  });
  salu("s_bcnt1_i32_b64", [](Ctx &c, const Inst &I) -> Error {
    uint32_t r = llvm::popcount(c.readS64(I.src(0)));
    c.writeS32(I.ops[0], r);
    c.w.scc = r != 0;
    return Error::success();
  });
  salu("s_ff1_i32_b32", [](Ctx &c, const Inst &I) -> Error {
    uint32_t v = c.readS32(I.src(0));
    c.writeS32(I.ops[0], v ? llvm::countr_zero(v) : ~0u);
    return Error::success();
  });
  salu("s_ff1_i32_b64", [](Ctx &c, const Inst &I) -> Error {
    uint64_t v = c.readS64(I.src(0));
    c.writeS32(I.ops[0], v ? llvm::countr_zero(v) : ~0u);
    return Error::success();
  });
  salu("s_flbit_i32_b32", [](Ctx &c, const Inst &I) -> Error {
    uint32_t v = c.readS32(I.src(0));
    c.writeS32(I.ops[0], v ? llvm::countl_zero(v) : ~0u);
    return Error::success();
  });
  salu("s_sext_i32_i8", [](Ctx &c, const Inst &I) -> Error {
    c.writeS32(I.ops[0], uint32_t(int32_t(int8_t(c.readS32(I.src(0))))));
    return Error::success();
  });
  salu("s_sext_i32_i16", [](Ctx &c, const Inst &I) -> Error {
    c.writeS32(I.ops[0], uint32_t(int32_t(int16_t(c.readS32(I.src(0))))));
    return Error::success();
  });
  salu("s_abs_i32", [](Ctx &c, const Inst &I) -> Error {
    int32_t v = int32_t(c.readS32(I.src(0)));
    uint32_t r = v < 0 ? 0u - uint32_t(v) : uint32_t(v);
    c.writeS32(I.ops[0], r);
    c.w.scc = r != 0;
    return Error::success();
  });
  salu("s_bitset0_b32", [](Ctx &c, const Inst &I) -> Error {
    c.w.sgpr[I.ops[0].reg] &= ~(1u << (c.readS32(I.src(0)) & 31));
    return Error::success();
  });
  salu("s_bitset1_b32", [](Ctx &c, const Inst &I) -> Error {
    c.w.sgpr[I.ops[0].reg] |= 1u << (c.readS32(I.src(0)) & 31);
    return Error::success();
  });
  salu("s_getpc_b64", [](Ctx &c, const Inst &I) -> Error {
    c.writeS64(I.ops[0], I.pc + I.size);
    return Error::success();
  });
  br("s_setpc_b64", [](Ctx &c, const Inst &I) -> Error {
    c.nextPc = c.readS64(I.ops[0]);
    return Error::success();
  });
  br("s_swappc_b64", [](Ctx &c, const Inst &I) -> Error {
    uint64_t target = c.readS64(I.src(0));
    c.writeS64(I.ops[0], I.pc + I.size);
    c.nextPc = target;
    return Error::success();
  });
#define MLAFP8_SAVEEXEC(NAME, EXPR)                                            \
  salu(NAME, [](Ctx &c, const Inst &I) -> Error {                              \
    return saveExec(c, I, [](uint64_t s, uint64_t e) { return EXPR; });        \
  });
  MLAFP8_SAVEEXEC("s_and_saveexec_b64", s & e)
  MLAFP8_SAVEEXEC("s_or_saveexec_b64", s | e)
  MLAFP8_SAVEEXEC("s_xor_saveexec_b64", s ^ e)
  MLAFP8_SAVEEXEC("s_andn2_saveexec_b64", s & ~e)
  MLAFP8_SAVEEXEC("s_orn2_saveexec_b64", s | ~e)
  MLAFP8_SAVEEXEC("s_nand_saveexec_b64", ~(s & e))
  MLAFP8_SAVEEXEC("s_nor_saveexec_b64", ~(s | e))
  MLAFP8_SAVEEXEC("s_xnor_saveexec_b64", ~(s ^ e))
  MLAFP8_SAVEEXEC("s_andn1_saveexec_b64", ~s & e)
  MLAFP8_SAVEEXEC("s_orn1_saveexec_b64", ~s | e)
#undef MLAFP8_SAVEEXEC

  // SOPK.
  salu("s_movk_i32", [](Ctx &c, const Inst &I) -> Error {
    c.writeS32(I.ops[0], uint32_t(simm16(I.src(0))));
    return Error::success();
  });
  salu("s_cmovk_i32", [](Ctx &c, const Inst &I) -> Error {
    if (c.w.scc)
      c.writeS32(I.ops[0], uint32_t(simm16(I.src(0))));
    return Error::success();
  });
  salu("s_addk_i32", [](Ctx &c, const Inst &I) -> Error {
    uint32_t a = c.readS32(I.ops[0]), b = uint32_t(simm16(I.src(0)));
    uint32_t r = a + b;
    c.w.scc = ((a ^ r) & (b ^ r)) >> 31;
    c.writeS32(I.ops[0], r);
    return Error::success();
  });
  salu("s_mulk_i32", [](Ctx &c, const Inst &I) -> Error {
    c.writeS32(I.ops[0], c.readS32(I.ops[0]) * uint32_t(simm16(I.src(0))));
    return Error::success();
  });
#define MLAFP8_CMPK(NAME, OP)                                                  \
  salu("s_cmpk_" NAME "_i32", [](Ctx &c, const Inst &I) -> Error {             \
    c.w.scc = int32_t(c.readS32(I.ops[0])) OP simm16(I.ops[1]);                \
    return Error::success();                                                   \
  });                                                                          \
  salu("s_cmpk_" NAME "_u32", [](Ctx &c, const Inst &I) -> Error {             \
    c.w.scc = c.readS32(I.ops[0]) OP uint32_t(uint16_t(I.ops[1].imm));         \
    return Error::success();                                                   \
  });
  MLAFP8_CMPK("eq", ==)
  MLAFP8_CMPK("lg", !=)
  MLAFP8_CMPK("gt", >)
  MLAFP8_CMPK("ge", >=)
  MLAFP8_CMPK("lt", <)
  MLAFP8_CMPK("le", <=)
#undef MLAFP8_CMPK
  salu("s_getreg_b32", [](Ctx &c, const Inst &I) -> Error {
    const Operand &h = I.src(0);
    uint32_t v = 0;
    if (uint32_t *r = hwReg(c, h))
      v = *r;
    else if (h.hwId == 4) // HW_ID: wave id in the low bits
      v = c.w.waveIdInGroup;
    else
      return c.fail(I, "s_getreg of this hardware register is not modelled");
    uint32_t mask = h.hwSize >= 32 ? ~0u : ((1u << h.hwSize) - 1);
    c.writeS32(I.ops[0], (v >> h.hwOffset) & mask);
    return Error::success();
  });
  salu("s_setreg_b32", [](Ctx &c, const Inst &I) -> Error {
    return setReg(c, I, c.readS32(I.src(1)));
  });
  salu("s_setreg_imm32_b32", [](Ctx &c, const Inst &I) -> Error {
    return setReg(c, I, immBits32(I.src(1)));
  });

  // SOPC.
#define MLAFP8_CMP(NAME, OP)                                                   \
  salu("s_cmp_" NAME "_i32", [](Ctx &c, const Inst &I) -> Error {              \
    return sopc(c, I, [](uint32_t a, uint32_t b) {                             \
      return int32_t(a) OP int32_t(b);                                         \
    });                                                                        \
  });                                                                          \
  salu("s_cmp_" NAME "_u32", [](Ctx &c, const Inst &I) -> Error {              \
    return sopc(c, I, [](uint32_t a, uint32_t b) { return a OP b; });          \
  });
  MLAFP8_CMP("eq", ==)
  MLAFP8_CMP("lg", !=)
  MLAFP8_CMP("gt", >)
  MLAFP8_CMP("ge", >=)
  MLAFP8_CMP("lt", <)
  MLAFP8_CMP("le", <=)
#undef MLAFP8_CMP
  salu("s_cmp_eq_u64", [](Ctx &c, const Inst &I) -> Error {
    c.w.scc = c.readS64(I.src(0)) == c.readS64(I.src(1));
    return Error::success();
  });
  salu("s_cmp_lg_u64", [](Ctx &c, const Inst &I) -> Error {
    c.w.scc = c.readS64(I.src(0)) != c.readS64(I.src(1));
    return Error::success();
  });
  salu("s_bitcmp0_b32", [](Ctx &c, const Inst &I) -> Error {
    c.w.scc = !((c.readS32(I.src(0)) >> (c.readS32(I.src(1)) & 31)) & 1);
    return Error::success();
  });
  salu("s_bitcmp1_b32", [](Ctx &c, const Inst &I) -> Error {
    c.w.scc = (c.readS32(I.src(0)) >> (c.readS32(I.src(1)) & 31)) & 1;
    return Error::success();
  });
  salu("s_bitcmp0_b64", [](Ctx &c, const Inst &I) -> Error {
    c.w.scc = !((c.readS64(I.src(0)) >> (c.readS32(I.src(1)) & 63)) & 1);
    return Error::success();
  });
  salu("s_bitcmp1_b64", [](Ctx &c, const Inst &I) -> Error {
    c.w.scc = (c.readS64(I.src(0)) >> (c.readS32(I.src(1)) & 63)) & 1;
    return Error::success();
  });

  // SOPP.
  for (const char *n :
       {"s_nop", "s_waitcnt", "s_sleep", "s_setprio", "s_dcache_wb",
        "s_dcache_inv", "s_icache_inv", "s_ttracedata", "buffer_inv",
        "buffer_wbl2", "buffer_wbinvl1", "buffer_wbinvl1_vol"})
    t[n] = {nop, InstClass::Other};
  t["s_endpgm"] = {[](Ctx &c, const Inst &) -> Error {
                     c.w.ended = true;
                     return Error::success();
                   },
                   InstClass::Other};
  t["s_barrier"] = {[](Ctx &c, const Inst &) -> Error {
                      c.w.atBarrier = true;
                      return Error::success();
                    },
                    InstClass::Other};
  t["s_sendmsg"] = {[](Ctx &c, const Inst &I) -> Error {
                      return c.fail(I, "s_sendmsg is not modelled");
                    },
                    InstClass::Other};
  t["s_trap"] = {[](Ctx &c, const Inst &I) -> Error {
                   return c.fail(I, "the kernel executed s_trap");
                 },
                 InstClass::Other};
  t["s_code_end"] = {[](Ctx &c, const Inst &I) -> Error {
                       return c.fail(I, "ran past the end of the kernel");
                     },
                     InstClass::Other};
  br("s_branch",
     [](Ctx &c, const Inst &I) -> Error { return branchIf(c, I, true); });
  br("s_cbranch_scc0",
     [](Ctx &c, const Inst &I) -> Error { return branchIf(c, I, !c.w.scc); });
  br("s_cbranch_scc1",
     [](Ctx &c, const Inst &I) -> Error { return branchIf(c, I, c.w.scc); });
  br("s_cbranch_vccz", [](Ctx &c, const Inst &I) -> Error {
    return branchIf(c, I, c.w.getVcc() == 0);
  });
  br("s_cbranch_vccnz", [](Ctx &c, const Inst &I) -> Error {
    return branchIf(c, I, c.w.getVcc() != 0);
  });
  br("s_cbranch_execz", [](Ctx &c, const Inst &I) -> Error {
    return branchIf(c, I, c.w.getExec() == 0);
  });
  br("s_cbranch_execnz", [](Ctx &c, const Inst &I) -> Error {
    return branchIf(c, I, c.w.getExec() != 0);
  });

  // SMEM.
  for (const char *n :
       {"s_load_dword", "s_load_dwordx2", "s_load_dwordx4", "s_load_dwordx8",
        "s_load_dwordx16", "s_buffer_load_dword", "s_buffer_load_dwordx2",
        "s_buffer_load_dwordx4", "s_buffer_load_dwordx8",
        "s_buffer_load_dwordx16"})
    t[n] = {sLoad, InstClass::SMEM};
}

} // namespace mlir::mlafp8::emu
