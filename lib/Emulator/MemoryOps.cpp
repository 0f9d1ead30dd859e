//===- MemoryOps.cpp - Global, buffer, scratch, flat and LDS accesses -----===//

#include "InstTable.h"

using namespace llvm;

namespace mlir::mlafp8::emu {
namespace {

using Ctx = ExecContext;

using Access = MemAccess;

/// Decodes the access size from the part of the mnemonic after the
/// load/store/read/write verb ("dwordx4", "ubyte", "short_d16_hi", "b128").
Access accessOf(StringRef kind, bool store) {
  Access a;
  a.bytes = 4;
  a.store = store;
  a.d16 = kind.contains("d16");
  a.d16Hi = kind.ends_with("_hi");
  StringRef k = kind.split('_').first;
  if (k == "dword" || k == "b32")
    a.bytes = 4;
  else if (k == "dwordx2" || k == "b64")
    a.bytes = 8;
  else if (k == "dwordx3" || k == "b96")
    a.bytes = 12;
  else if (k == "dwordx4" || k == "b128")
    a.bytes = 16;
  else if (k == "ubyte" || k == "u8" || k == "byte" || k == "b8")
    a.bytes = 1;
  else if (k == "sbyte" || k == "i8") {
    a.bytes = 1;
    a.signExtend = true;
  } else if (k == "ushort" || k == "u16" || k == "short" || k == "b16")
    a.bytes = 2;
  else if (k == "sshort" || k == "i16") {
    a.bytes = 2;
    a.signExtend = true;
  }
  return a;
}

/// Writes loaded bytes `p` into the destination VGPRs of `lane`.
void loadToVgpr(Ctx &c, const Operand &dst, unsigned lane, const uint8_t *p,
                const Access &a) {
  if (a.bytes >= 4) {
    for (unsigned i = 0; i < a.bytes / 4; ++i)
      std::memcpy(&c.vreg(dst, lane, i), p + 4 * i, 4);
    return;
  }
  uint32_t v = a.bytes == 1 ? p[0] : uint32_t(p[0] | (p[1] << 8));
  if (a.signExtend)
    v = a.bytes == 1 ? uint32_t(int32_t(int8_t(v)))
                     : uint32_t(int32_t(int16_t(v)));
  uint32_t &r = c.vreg(dst, lane);
  if (a.d16)
    r = a.d16Hi ? (r & 0xffffu) | (v << 16) : (r & 0xffff0000u) | (v & 0xffff);
  else
    r = v;
}

/// Collects store bytes of `lane` from the data VGPRs.
void storeFromVgpr(Ctx &c, const Operand &data, unsigned lane, uint8_t *p,
                   const Access &a) {
  if (a.bytes >= 4) {
    for (unsigned i = 0; i < a.bytes / 4; ++i)
      std::memcpy(p + 4 * i, &c.vreg(data, lane, i), 4);
    return;
  }
  uint32_t v = c.vreg(data, lane);
  if (a.d16Hi)
    v >>= 16;
  p[0] = uint8_t(v);
  if (a.bytes == 2)
    p[1] = uint8_t(v >> 8);
}

/// global_* and flat_* loads and stores.
template <bool IsFlat> Error globalAccess(Ctx &c, const Inst &I) {
  const Access &a = I.def->access;
  bool store = a.store;
  // Loads: vdst, vaddr, saddr; stores: vaddr, vdata, saddr.
  const Operand &vaddr = store ? I.ops[0] : I.ops[1];
  const Operand &vdata = store ? I.ops[1] : I.ops[0];
  const Operand *saddr = I.ops.size() > 2 ? &I.ops[2] : nullptr;
  bool useSaddr = saddr && saddr->kind == OpKind::Sgpr;
  uint64_t sbase = useSaddr ? c.readS64(*saddr) : 0;
  uint64_t exec = c.w.getExec();
  uint8_t tmp[16];
  for (; exec; exec &= exec - 1) {
    unsigned lane = __builtin_ctzll(exec);
    uint64_t addr =
        useSaddr ? sbase + c.vreg(vaddr, lane) : c.readRaw64(vaddr, lane);
    addr += int64_t(I.offset);
    auto p = IsFlat ? c.flat(I, lane, addr, a.bytes, store)
                    : c.global(I, lane, addr, a.bytes, store);
    if (!p)
      return p.takeError();
    if (store) {
      storeFromVgpr(c, vdata, lane, tmp, a);
      std::memcpy(*p, tmp, a.bytes);
      c.stats.bytesStored += a.bytes;
    } else {
      loadToVgpr(c, vdata, lane, *p, a);
      c.stats.bytesLoaded += a.bytes;
    }
  }
  return Error::success();
}

/// scratch_* (architected flat scratch): per-lane private offsets.
Error scratchAccess(Ctx &c, const Inst &I) {
  const Access &a = I.def->access;
  bool store = a.store;
  const Operand &vaddr = store ? I.ops[0] : I.ops[1];
  const Operand &vdata = store ? I.ops[1] : I.ops[0];
  const Operand &saddr = I.ops[2];
  uint64_t exec = c.w.getExec();
  uint8_t tmp[16];
  for (; exec; exec &= exec - 1) {
    unsigned lane = __builtin_ctzll(exec);
    int64_t off = I.offset;
    if (vaddr.kind == OpKind::Vgpr)
      off += c.vreg(vaddr, lane);
    if (saddr.kind == OpKind::Sgpr)
      off += c.readS32(saddr);
    auto p = c.scratchAt(I, lane, uint64_t(off), a.bytes);
    if (!p)
      return p.takeError();
    if (store) {
      storeFromVgpr(c, vdata, lane, tmp, a);
      std::memcpy(*p, tmp, a.bytes);
    } else {
      loadToVgpr(c, vdata, lane, *p, a);
    }
  }
  return Error::success();
}

/// MUBUF loads and stores through a buffer resource (V#), with gfx9 range
/// checking: out-of-range dwords load 0 and are not stored.
Error bufferAccess(Ctx &c, const Inst &I) {
  const Access &a = I.def->access;
  bool store = a.store;
  if (I.lds)
    return c.fail(I, "buffer loads to LDS are not modelled");
  // vdata, vaddr, srsrc, soffset.
  const Operand &vdata = I.ops[0];
  const Operand &vaddr = I.ops[1];
  unsigned r = I.ops[2].reg;
  uint32_t w0 = c.w.sgpr[r], w1 = c.w.sgpr[r + 1], w2 = c.w.sgpr[r + 2],
           w3 = c.w.sgpr[r + 3];
  uint64_t base = w0 | (uint64_t(w1 & 0xffff) << 32);
  uint32_t stride = (w1 >> 16) & 0x3fff;
  uint32_t numRecords = w2;
  if (w1 >> 31)
    return c.fail(I, "swizzled buffer resources are not modelled");
  if ((w3 >> 23) & 1)
    return c.fail(I, "buffer resources with ADD_TID_ENABLE are not modelled");
  uint32_t soffset = c.readS32(I.ops[3]);
  bool structured = I.idxen && stride != 0;
  uint64_t exec = c.w.getExec();
  for (; exec; exec &= exec - 1) {
    unsigned lane = __builtin_ctzll(exec);
    uint32_t index = 0, voffset = 0;
    if (I.idxen && I.offen) {
      index = c.vreg(vaddr, lane, 0);
      voffset = c.vreg(vaddr, lane, 1);
    } else if (I.idxen) {
      index = c.vreg(vaddr, lane);
    } else if (I.offen) {
      voffset = c.vreg(vaddr, lane);
    }
    uint32_t off = voffset + uint32_t(I.offset);
    uint64_t addr = base + soffset + uint64_t(index) * stride + off;
    unsigned chunk = a.bytes >= 4 ? 4 : a.bytes;
    for (unsigned i = 0; i < a.bytes / chunk; ++i) {
      bool inRange = structured ? index < numRecords
                                : uint64_t(off) + chunk * (i + 1) <= numRecords;
      if (!store) {
        uint8_t bytes[4] = {0, 0, 0, 0};
        if (inRange) {
          auto p = c.global(I, lane, addr + chunk * i, chunk, false);
          if (!p)
            return p.takeError();
          std::memcpy(bytes, *p, chunk);
          c.stats.bytesLoaded += chunk;
        }
        if (chunk == 4)
          std::memcpy(&c.vreg(vdata, lane, i), bytes, 4);
        else
          loadToVgpr(c, vdata, lane, bytes, a);
      } else if (inRange) {
        auto p = c.global(I, lane, addr + chunk * i, chunk, true);
        if (!p)
          return p.takeError();
        if (chunk == 4) {
          std::memcpy(*p, &c.vreg(vdata, lane, i), 4);
        } else {
          uint8_t tmp[4];
          storeFromVgpr(c, vdata, lane, tmp, a);
          std::memcpy(*p, tmp, chunk);
        }
        c.stats.bytesStored += chunk;
      }
    }
  }
  return Error::success();
}

/// Global/flat/buffer atomics (32-bit integer and f32 add).
template <typename F> Error globalAtomic(Ctx &c, const Inst &I, F op) {
  bool rtn = I.sc0;
  unsigned o = rtn ? 1 : 0;
  const Operand &vaddr = I.ops[o];
  const Operand &vdata = I.ops[o + 1];
  const Operand *saddr = I.ops.size() > o + 2 ? &I.ops[o + 2] : nullptr;
  bool useSaddr = saddr && saddr->kind == OpKind::Sgpr;
  uint64_t sbase = useSaddr ? c.readS64(*saddr) : 0;
  uint64_t exec = c.w.getExec();
  for (; exec; exec &= exec - 1) {
    unsigned lane = __builtin_ctzll(exec);
    uint64_t addr =
        useSaddr ? sbase + c.vreg(vaddr, lane) : c.readRaw64(vaddr, lane);
    addr += int64_t(I.offset);
    auto p = c.global(I, lane, addr, 4, true);
    if (!p)
      return p.takeError();
    uint32_t data = c.vreg(vdata, lane);
    uint32_t compare = vdata.width > 1 ? c.vreg(vdata, lane, 1) : 0;
    uint32_t old;
    if (reinterpret_cast<uintptr_t>(*p) % 4 == 0) {
      // Workgroups may run on several host threads: the read-modify-write is
      // one host atomic (sequentially consistent, so it also orders the plain
      // stores and loads around it, like the fences a kernel pairs it with).
      auto *word = reinterpret_cast<uint32_t *>(*p);
      old = __atomic_load_n(word, __ATOMIC_SEQ_CST);
      while (!__atomic_compare_exchange_n(word, &old, op(old, data, compare),
                                          /*weak=*/false, __ATOMIC_SEQ_CST,
                                          __ATOMIC_SEQ_CST)) {
      }
    } else {
      std::memcpy(&old, *p, 4);
      uint32_t nv = op(old, data, compare);
      std::memcpy(*p, &nv, 4);
    }
    if (rtn)
      c.vreg(I.ops[0], lane) = old;
    c.stats.bytesLoaded += 4;
    c.stats.bytesStored += 4;
  }
  return Error::success();
}

/// LDS reads/writes of one address per lane.
Error dsRead(Ctx &c, const Inst &I) {
  const Access &a = I.def->access;
  const Operand &vdst = I.ops[0], &vaddr = I.ops[1];
  uint64_t exec = c.w.getExec();
  for (; exec; exec &= exec - 1) {
    unsigned lane = __builtin_ctzll(exec);
    uint32_t addr = c.vreg(vaddr, lane) + uint32_t(uint16_t(I.offset));
    auto p = c.ldsAt(I, lane, addr, a.bytes, false);
    if (!p)
      return p.takeError();
    loadToVgpr(c, vdst, lane, *p, a);
    c.stats.ldsBytesRead += a.bytes;
  }
  return Error::success();
}

Error dsWrite(Ctx &c, const Inst &I) {
  const Access &a = I.def->access;
  const Operand &vaddr = I.ops[0], &vdata = I.ops[1];
  uint64_t exec = c.w.getExec();
  uint8_t tmp[16];
  for (; exec; exec &= exec - 1) {
    unsigned lane = __builtin_ctzll(exec);
    uint32_t addr = c.vreg(vaddr, lane) + uint32_t(uint16_t(I.offset));
    auto p = c.ldsAt(I, lane, addr, a.bytes, true);
    if (!p)
      return p.takeError();
    storeFromVgpr(c, vdata, lane, tmp, a);
    std::memcpy(*p, tmp, a.bytes);
    c.stats.ldsBytesWritten += a.bytes;
  }
  return Error::success();
}

/// ds_read2/ds_write2 (and st64): two addresses base + offsetN * size.
Error dsRead2(Ctx &c, const Inst &I) {
  unsigned size = I.def->access.bytes;
  unsigned scale = size * (I.def->access.stride64 ? 64 : 1);
  const Operand &vdst = I.ops[0], &vaddr = I.ops[1];
  uint64_t exec = c.w.getExec();
  for (; exec; exec &= exec - 1) {
    unsigned lane = __builtin_ctzll(exec);
    uint32_t base = c.vreg(vaddr, lane);
    for (unsigned k = 0; k < 2; ++k) {
      uint32_t addr = base + (k ? I.offset1 : I.offset0) * scale;
      auto p = c.ldsAt(I, lane, addr, size, false);
      if (!p)
        return p.takeError();
      // Registers of one lane are not adjacent in the register file.
      for (unsigned d = 0; d < size / 4; ++d)
        std::memcpy(&c.vreg(vdst, lane, k * size / 4 + d), *p + 4 * d, 4);
    }
    c.stats.ldsBytesRead += 2 * size;
  }
  return Error::success();
}

Error dsWrite2(Ctx &c, const Inst &I) {
  unsigned size = I.def->access.bytes;
  unsigned scale = size * (I.def->access.stride64 ? 64 : 1);
  const Operand &vaddr = I.ops[0];
  uint64_t exec = c.w.getExec();
  for (; exec; exec &= exec - 1) {
    unsigned lane = __builtin_ctzll(exec);
    uint32_t base = c.vreg(vaddr, lane);
    for (unsigned k = 0; k < 2; ++k) {
      uint32_t addr = base + (k ? I.offset1 : I.offset0) * scale;
      auto p = c.ldsAt(I, lane, addr, size, true);
      if (!p)
        return p.takeError();
      for (unsigned d = 0; d < size / 4; ++d)
        std::memcpy(*p + 4 * d, &c.vreg(I.ops[1 + k], lane, d), 4);
    }
    c.stats.ldsBytesWritten += 2 * size;
  }
  return Error::success();
}

/// ds_bpermute_b32: lane i reads data[((addr + offset) >> 2) & 63]; inactive
/// sources give 0.
Error dsBpermute(Ctx &c, const Inst &I) {
  uint64_t exec = c.w.getExec();
  uint32_t out[64];
  for (unsigned lane = 0; lane < 64; ++lane) {
    if (!((exec >> lane) & 1))
      continue;
    unsigned src =
        ((c.vreg(I.ops[1], lane) + uint32_t(uint16_t(I.offset))) >> 2) & 63;
    out[lane] = (exec >> src) & 1 ? c.vreg(I.ops[2], src) : 0;
  }
  for (unsigned lane = 0; lane < 64; ++lane)
    if ((exec >> lane) & 1)
      c.vreg(I.ops[0], lane) = out[lane];
  return Error::success();
}

/// ds_permute_b32: lane i sends data[i] to lane ((addr + offset) >> 2) & 63;
/// the highest sender wins, unwritten active lanes get 0.
Error dsPermute(Ctx &c, const Inst &I) {
  uint64_t exec = c.w.getExec();
  uint32_t out[64] = {};
  for (unsigned lane = 0; lane < 64; ++lane) {
    if (!((exec >> lane) & 1))
      continue;
    unsigned dst =
        ((c.vreg(I.ops[1], lane) + uint32_t(uint16_t(I.offset))) >> 2) & 63;
    out[dst] = c.vreg(I.ops[2], lane);
  }
  for (unsigned lane = 0; lane < 64; ++lane)
    if ((exec >> lane) & 1)
      c.vreg(I.ops[0], lane) = out[lane];
  return Error::success();
}

/// ds_swizzle_b32: quad-permute mode (offset bit 15) or bit-masked lane
/// arithmetic within groups of 32; inactive sources give 0.
Error dsSwizzle(Ctx &c, const Inst &I) {
  uint64_t exec = c.w.getExec();
  uint16_t off = I.swizzle;
  uint32_t out[64];
  for (unsigned lane = 0; lane < 64; ++lane) {
    if (!((exec >> lane) & 1))
      continue;
    unsigned src;
    if (off & 0x8000) {
      src = (lane & ~3u) | ((off >> (2 * (lane & 3))) & 3);
    } else {
      unsigned andMask = off & 0x1f, orMask = (off >> 5) & 0x1f,
               xorMask = (off >> 10) & 0x1f;
      src = (lane & 0x20) | ((((lane & 0x1f) & andMask) | orMask) ^ xorMask);
    }
    out[lane] = (exec >> src) & 1 ? c.vreg(I.ops[1], src) : 0;
  }
  for (unsigned lane = 0; lane < 64; ++lane)
    if ((exec >> lane) & 1)
      c.vreg(I.ops[0], lane) = out[lane];
  return Error::success();
}

/// LDS 32-bit atomics: ds_<op>_u32 vaddr, vdata / ds_<op>_rtn_u32 vdst, ...
template <typename F> Error dsAtomic(Ctx &c, const Inst &I, F op) {
  bool rtn = I.def->access.returnsPrior;
  unsigned o = rtn ? 1 : 0;
  uint64_t exec = c.w.getExec();
  for (; exec; exec &= exec - 1) {
    unsigned lane = __builtin_ctzll(exec);
    uint32_t addr = c.vreg(I.ops[o], lane) + uint32_t(uint16_t(I.offset));
    auto p = c.ldsAt(I, lane, addr, 4, true);
    if (!p)
      return p.takeError();
    uint32_t old;
    std::memcpy(&old, *p, 4);
    uint32_t b = I.ops.size() > o + 2 ? c.vreg(I.ops[o + 2], lane) : 0;
    uint32_t nv = op(old, c.vreg(I.ops[o + 1], lane), b);
    std::memcpy(*p, &nv, 4);
    if (rtn)
      c.vreg(I.ops[0], lane) = old;
  }
  return Error::success();
}

constexpr Access returningPrior() {
  Access a;
  a.returnsPrior = true;
  return a;
}

/// ds_read2/ds_write2: `bytes` per address, offsets in elements (or in 64
/// elements).
constexpr Access pairAccess(uint8_t bytes, bool store, bool stride64) {
  Access a;
  a.bytes = bytes;
  a.store = store;
  a.stride64 = stride64;
  return a;
}

/// An atomic row: `APPLY` (globalAtomic or dsAtomic) stores the new memory
/// value from the old one (a), the data (b) and, for the compare forms, the
/// compare value (d).
#define MLAFP8_ATOMIC(NAME, CLASS, APPLY, ACCESS, ...)                         \
  InstDef {                                                                    \
    NAME, Operands::Def, InstClass::CLASS,                                     \
        [](Ctx &c, const Inst &I) -> Error {                                   \
          return APPLY(c, I, [](uint32_t a, uint32_t b, uint32_t d) {          \
            (void)d;                                                           \
            return uint32_t(__VA_ARGS__);                                      \
          });                                                                  \
        },                                                                     \
        ACCESS                                                                 \
  }
/// A global atomic returns the prior value when printed with sc0.
#define MLAFP8_GLOBAL_ATOMIC(NAME, ...)                                        \
  MLAFP8_ATOMIC("global_atomic_" NAME, VMEM, globalAtomic, Access(),           \
                __VA_ARGS__)
#define MLAFP8_DS_ATOMIC(NAME, ...)                                            \
  MLAFP8_ATOMIC("ds_" NAME, LDS, dsAtomic, Access(), __VA_ARGS__)
/// The _rtn_ LDS atomics write the prior value to their first operand.
#define MLAFP8_DS_ATOMIC_RTN(NAME, ...)                                        \
  MLAFP8_ATOMIC("ds_" NAME, LDS, dsAtomic, returningPrior(), __VA_ARGS__)

const InstDef kAtomicRows[] = {
    MLAFP8_GLOBAL_ATOMIC("add", a + b),
    MLAFP8_GLOBAL_ATOMIC("sub", a - b),
    MLAFP8_GLOBAL_ATOMIC("smax", std::max(int32_t(a), int32_t(b))),
    MLAFP8_GLOBAL_ATOMIC("smin", std::min(int32_t(a), int32_t(b))),
    MLAFP8_GLOBAL_ATOMIC("umax", std::max(a, b)),
    MLAFP8_GLOBAL_ATOMIC("umin", std::min(a, b)),
    MLAFP8_GLOBAL_ATOMIC("and", a &b),
    MLAFP8_GLOBAL_ATOMIC("or", a | b),
    MLAFP8_GLOBAL_ATOMIC("xor", a ^ b),
    MLAFP8_GLOBAL_ATOMIC("swap", b),
    MLAFP8_GLOBAL_ATOMIC("cmpswap", a == d ? b : a),
    MLAFP8_GLOBAL_ATOMIC("add_f32", bitsF32(asF32(a) + asF32(b))),
    MLAFP8_DS_ATOMIC("add_u32", a + b),
    MLAFP8_DS_ATOMIC_RTN("add_rtn_u32", a + b),
    MLAFP8_DS_ATOMIC("sub_u32", a - b),
    MLAFP8_DS_ATOMIC("max_u32", std::max(a, b)),
    MLAFP8_DS_ATOMIC("min_u32", std::min(a, b)),
    MLAFP8_DS_ATOMIC("max_i32", std::max(int32_t(a), int32_t(b))),
    MLAFP8_DS_ATOMIC("min_i32", std::min(int32_t(a), int32_t(b))),
    MLAFP8_DS_ATOMIC("and_b32", a &b),
    MLAFP8_DS_ATOMIC("or_b32", a | b),
    MLAFP8_DS_ATOMIC("xor_b32", a ^ b),
    MLAFP8_DS_ATOMIC("add_f32", bitsF32(asF32(a) + asF32(b))),
    MLAFP8_DS_ATOMIC_RTN("add_rtn_f32", bitsF32(asF32(a) + asF32(b))),
    MLAFP8_DS_ATOMIC_RTN("wrxchg_rtn_b32", b),
    MLAFP8_DS_ATOMIC("cmpst_b32", a == b ? d : a),
};
#undef MLAFP8_DS_ATOMIC_RTN
#undef MLAFP8_DS_ATOMIC
#undef MLAFP8_GLOBAL_ATOMIC
#undef MLAFP8_ATOMIC

const InstDef kLdsRows[] = {
    {"ds_read2_b32", Operands::Def, InstClass::LDS, dsRead2,
     pairAccess(4, /*store=*/false, /*stride64=*/false)},
    {"ds_read2_b64", Operands::Def, InstClass::LDS, dsRead2,
     pairAccess(8, /*store=*/false, /*stride64=*/false)},
    {"ds_read2st64_b32", Operands::Def, InstClass::LDS, dsRead2,
     pairAccess(4, /*store=*/false, /*stride64=*/true)},
    {"ds_read2st64_b64", Operands::Def, InstClass::LDS, dsRead2,
     pairAccess(8, /*store=*/false, /*stride64=*/true)},
    {"ds_write2_b32", Operands::NoDef, InstClass::LDS, dsWrite2,
     pairAccess(4, /*store=*/true, /*stride64=*/false)},
    {"ds_write2_b64", Operands::NoDef, InstClass::LDS, dsWrite2,
     pairAccess(8, /*store=*/true, /*stride64=*/false)},
    {"ds_write2st64_b32", Operands::NoDef, InstClass::LDS, dsWrite2,
     pairAccess(4, /*store=*/true, /*stride64=*/true)},
    {"ds_write2st64_b64", Operands::NoDef, InstClass::LDS, dsWrite2,
     pairAccess(8, /*store=*/true, /*stride64=*/true)},
    {"ds_bpermute_b32", Operands::Def, InstClass::LDS, dsBpermute},
    {"ds_permute_b32", Operands::Def, InstClass::LDS, dsPermute},
    {"ds_swizzle_b32", Operands::Def, InstClass::LDS, dsSwizzle},
};

} // namespace

void registerMemoryOps(InstTable &t) {
  // The loads and stores of every width: one handler per address space; the
  // row says what the instruction moves.
  for (const char *k :
       {"dword", "dwordx2", "dwordx3", "dwordx4", "ubyte", "sbyte", "ushort",
        "sshort", "short_d16", "short_d16_hi", "ubyte_d16", "ubyte_d16_hi",
        "sbyte_d16", "sbyte_d16_hi"}) {
    Access load = accessOf(k, /*store=*/false);
    t.add({(Twine("global_load_") + k).str(), Operands::Def, InstClass::VMEM,
           globalAccess<false>, load});
    t.add({(Twine("flat_load_") + k).str(), Operands::Def, InstClass::VMEM,
           globalAccess<true>, load});
    t.add({(Twine("scratch_load_") + k).str(), Operands::Def, InstClass::VMEM,
           scratchAccess, load});
    t.add({(Twine("buffer_load_") + k).str(), Operands::Def, InstClass::VMEM,
           bufferAccess, load});
  }
  for (const char *k : {"dword", "dwordx2", "dwordx3", "dwordx4", "byte",
                        "short", "byte_d16_hi", "short_d16_hi"}) {
    Access store = accessOf(k, /*store=*/true);
    t.add({(Twine("global_store_") + k).str(), Operands::NoDef, InstClass::VMEM,
           globalAccess<false>, store});
    t.add({(Twine("flat_store_") + k).str(), Operands::NoDef, InstClass::VMEM,
           globalAccess<true>, store});
    t.add({(Twine("scratch_store_") + k).str(), Operands::NoDef,
           InstClass::VMEM, scratchAccess, store});
    t.add({(Twine("buffer_store_") + k).str(), Operands::NoDef, InstClass::VMEM,
           bufferAccess, store});
  }
  for (const char *k :
       {"b32", "b64", "b96", "b128", "u8", "i8", "u16", "i16", "u8_d16",
        "u8_d16_hi", "i8_d16", "i8_d16_hi", "u16_d16", "u16_d16_hi"})
    t.add({(Twine("ds_read_") + k).str(), Operands::Def, InstClass::LDS, dsRead,
           accessOf(k, /*store=*/false)});
  for (const char *k :
       {"b8", "b16", "b32", "b64", "b96", "b128", "b8_d16_hi", "b16_d16_hi"})
    t.add({(Twine("ds_write_") + k).str(), Operands::NoDef, InstClass::LDS,
           dsWrite, accessOf(k, /*store=*/true)});
  t.add(kLdsRows);
  t.add(kAtomicRows);
}

} // namespace mlir::mlafp8::emu
