//===- ScalarControlOps.cpp - SOPK, SOPC, SOPP control flow and SMEM ------===//

#include "InstTable.h"

using namespace llvm;

namespace mlir::mlafp8::emu {
namespace {

using Ctx = ExecContext;

/// SOPC: SCC = f(src0, src1).
template <typename F> Error sopc(Ctx &c, const Inst &I, F f) {
  c.w.scc = f(c.readS32(I.src(0)), c.readS32(I.src(1)));
  return Error::success();
}

/// The SOPK / SOPP 16-bit immediate, sign-extended.
int32_t simm16(const Operand &op) { return int32_t(int16_t(uint16_t(op.imm))); }

/// SOPP branches: PC = PC + 4 + simm16 * 4 when taken.
Error branchIf(Ctx &c, const Inst &I, bool taken) {
  if (taken)
    c.nextPc = I.pc + 4 + int64_t(simm16(I.ops[0])) * 4;
  return Error::success();
}

/// The MODE / other hardware registers that s_getreg/s_setreg address.
uint32_t *hwReg(Ctx &c, const Operand &op) {
  return op.hwId == 1 ? &c.w.mode : nullptr;
}

/// s_setreg: writes `value` into the hwreg(id, offset, size) bit field.
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

/// What s_load_dword<x dwords> (or s_buffer_load_...) reads.
constexpr MemAccess smemAccess(unsigned dwords, bool bufferResource) {
  MemAccess a;
  a.bytes = uint8_t(4 * dwords);
  a.bufferResource = bufferResource;
  return a;
}

/// s_load_dword* (from a 64-bit address) and s_buffer_load_dword* (through a
/// buffer resource, out-of-range dwords reading 0).
Error sLoad(Ctx &c, const Inst &I) {
  const Operand &dst = I.ops[0];
  unsigned n = I.def->access.bytes / 4;
  uint64_t off = 0;
  if (I.numSrcs() > 1)
    off = I.src(1).kind == OpKind::Imm ? uint64_t(int64_t(I.src(1).imm))
                                       : c.readS32(I.src(1));
  off += int64_t(I.offset);
  bool isBuffer = I.def->access.bufferResource;
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

/// Waits and cache maintenance: nothing to model.
Error nop(Ctx &, const Inst &) { return Error::success(); }

/// The signed and unsigned s_cmpk rows of one relation (ops[0] is compared
/// with the 16-bit immediate ops[1]).
#define MLAFP8_CMPK(NAME, OP)                                                  \
  InstDef{"s_cmpk_" NAME "_i32", Operands::NoDef, InstClass::SALU,             \
          [](Ctx &c, const Inst &I) -> Error {                                 \
            c.w.scc = int32_t(c.readS32(I.ops[0])) OP simm16(I.ops[1]);        \
            return Error::success();                                           \
          }},                                                                  \
      InstDef {                                                                \
    "s_cmpk_" NAME "_u32", Operands::NoDef, InstClass::SALU,                   \
        [](Ctx &c, const Inst &I) -> Error {                                   \
          c.w.scc = c.readS32(I.ops[0]) OP uint32_t(uint16_t(I.ops[1].imm));   \
          return Error::success();                                             \
        }                                                                      \
  }
/// The signed and unsigned 32-bit s_cmp rows of one relation.
#define MLAFP8_CMP(NAME, OP)                                                   \
  InstDef{"s_cmp_" NAME "_i32", Operands::NoDef, InstClass::SALU,              \
          [](Ctx &c, const Inst &I) -> Error {                                 \
            return sopc(c, I, [](uint32_t a, uint32_t b) {                     \
              return int32_t(a) OP int32_t(b);                                 \
            });                                                                \
          }},                                                                  \
      InstDef {                                                                \
    "s_cmp_" NAME "_u32", Operands::NoDef, InstClass::SALU,                    \
        [](Ctx &c, const Inst &I) -> Error {                                   \
          return sopc(c, I, [](uint32_t a, uint32_t b) { return a OP b; });    \
        }                                                                      \
  }

const InstDef kScalarControlRows[] = {
    // SOPK.
    {"s_movk_i32", Operands::Def, InstClass::SALU,
     [](Ctx &c, const Inst &I) -> Error {
       c.writeS32(I.ops[0], uint32_t(simm16(I.src(0))));
       return Error::success();
     }},
    {"s_cmovk_i32", Operands::Def, InstClass::SALU,
     [](Ctx &c, const Inst &I) -> Error {
       if (c.w.scc)
         c.writeS32(I.ops[0], uint32_t(simm16(I.src(0))));
       return Error::success();
     }},
    {"s_addk_i32", Operands::Def, InstClass::SALU,
     [](Ctx &c, const Inst &I) -> Error {
       uint32_t a = c.readS32(I.ops[0]), b = uint32_t(simm16(I.src(0)));
       uint32_t r = a + b;
       c.w.scc = ((a ^ r) & (b ^ r)) >> 31;
       c.writeS32(I.ops[0], r);
       return Error::success();
     }},
    {"s_mulk_i32", Operands::Def, InstClass::SALU,
     [](Ctx &c, const Inst &I) -> Error {
       c.writeS32(I.ops[0], c.readS32(I.ops[0]) * uint32_t(simm16(I.src(0))));
       return Error::success();
     }},
    MLAFP8_CMPK("eq", ==),
    MLAFP8_CMPK("lg", !=),
    MLAFP8_CMPK("gt", >),
    MLAFP8_CMPK("ge", >=),
    MLAFP8_CMPK("lt", <),
    MLAFP8_CMPK("le", <=),
    {"s_getreg_b32", Operands::Def, InstClass::SALU,
     [](Ctx &c, const Inst &I) -> Error {
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
     }},
    {"s_setreg_b32", Operands::NoDef, InstClass::SALU,
     [](Ctx &c, const Inst &I) -> Error {
       return setReg(c, I, c.readS32(I.src(1)));
     }},
    {"s_setreg_imm32_b32", Operands::NoDef, InstClass::SALU,
     [](Ctx &c, const Inst &I) -> Error {
       return setReg(c, I, immBits32(I.src(1)));
     }},

    // SOPC.
    MLAFP8_CMP("eq", ==),
    MLAFP8_CMP("lg", !=),
    MLAFP8_CMP("gt", >),
    MLAFP8_CMP("ge", >=),
    MLAFP8_CMP("lt", <),
    MLAFP8_CMP("le", <=),
    {"s_cmp_eq_u64", Operands::NoDef, InstClass::SALU,
     [](Ctx &c, const Inst &I) -> Error {
       c.w.scc = c.readS64(I.src(0)) == c.readS64(I.src(1));
       return Error::success();
     }},
    {"s_cmp_lg_u64", Operands::NoDef, InstClass::SALU,
     [](Ctx &c, const Inst &I) -> Error {
       c.w.scc = c.readS64(I.src(0)) != c.readS64(I.src(1));
       return Error::success();
     }},
    {"s_bitcmp0_b32", Operands::NoDef, InstClass::SALU,
     [](Ctx &c, const Inst &I) -> Error {
       c.w.scc = !((c.readS32(I.src(0)) >> (c.readS32(I.src(1)) & 31)) & 1);
       return Error::success();
     }},
    {"s_bitcmp1_b32", Operands::NoDef, InstClass::SALU,
     [](Ctx &c, const Inst &I) -> Error {
       c.w.scc = (c.readS32(I.src(0)) >> (c.readS32(I.src(1)) & 31)) & 1;
       return Error::success();
     }},
    {"s_bitcmp0_b64", Operands::NoDef, InstClass::SALU,
     [](Ctx &c, const Inst &I) -> Error {
       c.w.scc = !((c.readS64(I.src(0)) >> (c.readS32(I.src(1)) & 63)) & 1);
       return Error::success();
     }},
    {"s_bitcmp1_b64", Operands::NoDef, InstClass::SALU,
     [](Ctx &c, const Inst &I) -> Error {
       c.w.scc = (c.readS64(I.src(0)) >> (c.readS32(I.src(1)) & 63)) & 1;
       return Error::success();
     }},

    // SOPP and cache controls; waits and cache maintenance are no-ops here.
    {"s_nop", Operands::NoDef, InstClass::Other, nop},
    {"s_waitcnt", Operands::NoDef, InstClass::Other, nop},
    {"s_sleep", Operands::NoDef, InstClass::Other, nop},
    {"s_setprio", Operands::NoDef, InstClass::Other, nop},
    {"s_dcache_wb", Operands::NoDef, InstClass::Other, nop},
    {"s_dcache_inv", Operands::NoDef, InstClass::Other, nop},
    {"s_icache_inv", Operands::NoDef, InstClass::Other, nop},
    {"s_ttracedata", Operands::NoDef, InstClass::Other, nop},
    {"buffer_inv", Operands::NoDef, InstClass::Other, nop},
    {"buffer_wbl2", Operands::NoDef, InstClass::Other, nop},
    {"buffer_wbinvl1", Operands::NoDef, InstClass::Other, nop},
    {"buffer_wbinvl1_vol", Operands::NoDef, InstClass::Other, nop},
    {"s_endpgm", Operands::NoDef, InstClass::Other,
     [](Ctx &c, const Inst &) -> Error {
       c.w.ended = true;
       return Error::success();
     }},
    {"s_barrier", Operands::NoDef, InstClass::Other,
     [](Ctx &c, const Inst &) -> Error {
       c.w.atBarrier = true;
       return Error::success();
     }},
    {"s_sendmsg", Operands::NoDef, InstClass::Other,
     [](Ctx &c, const Inst &I) -> Error {
       return c.fail(I, "s_sendmsg is not modelled");
     }},
    {"s_trap", Operands::NoDef, InstClass::Other,
     [](Ctx &c, const Inst &I) -> Error {
       return c.fail(I, "the kernel executed s_trap");
     }},
    {"s_code_end", Operands::NoDef, InstClass::Other,
     [](Ctx &c, const Inst &I) -> Error {
       return c.fail(I, "ran past the end of the kernel");
     }},
    {"s_branch", Operands::NoDef, InstClass::Branch,
     [](Ctx &c, const Inst &I) -> Error { return branchIf(c, I, true); }},
    {"s_cbranch_scc0", Operands::NoDef, InstClass::Branch,
     [](Ctx &c, const Inst &I) -> Error { return branchIf(c, I, !c.w.scc); }},
    {"s_cbranch_scc1", Operands::NoDef, InstClass::Branch,
     [](Ctx &c, const Inst &I) -> Error { return branchIf(c, I, c.w.scc); }},
    {"s_cbranch_vccz", Operands::NoDef, InstClass::Branch,
     [](Ctx &c, const Inst &I) -> Error {
       return branchIf(c, I, c.w.getVcc() == 0);
     }},
    {"s_cbranch_vccnz", Operands::NoDef, InstClass::Branch,
     [](Ctx &c, const Inst &I) -> Error {
       return branchIf(c, I, c.w.getVcc() != 0);
     }},
    {"s_cbranch_execz", Operands::NoDef, InstClass::Branch,
     [](Ctx &c, const Inst &I) -> Error {
       return branchIf(c, I, c.w.getExec() == 0);
     }},
    {"s_cbranch_execnz", Operands::NoDef, InstClass::Branch,
     [](Ctx &c, const Inst &I) -> Error {
       return branchIf(c, I, c.w.getExec() != 0);
     }},

    // SMEM.
    {"s_load_dword", Operands::Def, InstClass::SMEM, sLoad,
     smemAccess(1, /*bufferResource=*/false)},
    {"s_load_dwordx2", Operands::Def, InstClass::SMEM, sLoad,
     smemAccess(2, /*bufferResource=*/false)},
    {"s_load_dwordx4", Operands::Def, InstClass::SMEM, sLoad,
     smemAccess(4, /*bufferResource=*/false)},
    {"s_load_dwordx8", Operands::Def, InstClass::SMEM, sLoad,
     smemAccess(8, /*bufferResource=*/false)},
    {"s_load_dwordx16", Operands::Def, InstClass::SMEM, sLoad,
     smemAccess(16, /*bufferResource=*/false)},
    {"s_buffer_load_dword", Operands::Def, InstClass::SMEM, sLoad,
     smemAccess(1, /*bufferResource=*/true)},
    {"s_buffer_load_dwordx2", Operands::Def, InstClass::SMEM, sLoad,
     smemAccess(2, /*bufferResource=*/true)},
    {"s_buffer_load_dwordx4", Operands::Def, InstClass::SMEM, sLoad,
     smemAccess(4, /*bufferResource=*/true)},
    {"s_buffer_load_dwordx8", Operands::Def, InstClass::SMEM, sLoad,
     smemAccess(8, /*bufferResource=*/true)},
    {"s_buffer_load_dwordx16", Operands::Def, InstClass::SMEM, sLoad,
     smemAccess(16, /*bufferResource=*/true)},
};
#undef MLAFP8_CMP
#undef MLAFP8_CMPK

} // namespace

void registerScalarControlOps(InstTable &t) { t.add(kScalarControlRows); }

} // namespace mlir::mlafp8::emu
