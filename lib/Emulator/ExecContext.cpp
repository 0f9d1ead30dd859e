//===- ExecContext.cpp - Operand access and checked memory of a wave ------===//

#include "Internal.h"

#include "mla-fp8/Reference/Formats.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;

namespace mlir::mlafp8::emu {

float halfToFloat(uint16_t h) { return f16ToFloat(h); }
uint16_t floatToHalf(float f) { return floatToF16(f); }

/// 1/(2*pi), the inline constant 248.
static bool isInv2Pi(double d) {
  return std::fabs(d - 0.15915494309189532) < 1e-7;
}

uint16_t immBits16(const Operand &op) {
  if (!op.isFloat)
    return uint16_t(op.imm);
  if (isInv2Pi(op.fimm))
    return 0x3118;
  return floatToHalf(float(op.fimm));
}
uint32_t immBits32(const Operand &op) {
  if (!op.isFloat)
    return uint32_t(op.imm);
  if (isInv2Pi(op.fimm))
    return 0x3e22f983u;
  return bitsF32(float(op.fimm));
}
uint64_t immBits64(const Operand &op) {
  if (!op.isFloat)
    return uint64_t(op.imm);
  if (isInv2Pi(op.fimm))
    return 0x3fc45f306dc9c882ull;
  return bitsF64(op.fimm);
}

Error ExecContext::fail(const Inst &inst, const Twine &msg) const {
  std::string s;
  raw_string_ostream os(s);
  os << "workgroup (" << w.workgroupId[0] << "," << w.workgroupId[1] << ","
     << w.workgroupId[2] << ") wave " << w.waveIdInGroup << ", pc "
     << format_hex(inst.pc, 10) << " '" << inst.text << "': " << msg;
  return createStringError(s);
}

uint32_t ExecContext::readS32(const Operand &op) const {
  switch (op.kind) {
  case OpKind::Sgpr:
    return op.reg == 125 ? 0 : w.sgpr[op.reg];
  case OpKind::Imm:
    return immBits32(op);
  case OpKind::Scc:
    return w.scc;
  case OpKind::SharedBase:
    return uint32_t(kSharedApertureBase >> 32);
  case OpKind::SharedLimit:
    return uint32_t((kSharedApertureBase + kApertureSize - 1) >> 32);
  case OpKind::PrivateBase:
    return uint32_t(kPrivateApertureBase >> 32);
  case OpKind::PrivateLimit:
    return uint32_t((kPrivateApertureBase + kApertureSize - 1) >> 32);
  default:
    return 0;
  }
}

uint64_t ExecContext::readS64(const Operand &op) const {
  switch (op.kind) {
  case OpKind::Sgpr:
    return op.reg == 125 ? 0 : w.getSgpr64(op.reg);
  case OpKind::Imm:
    return immBits64(op);
  case OpKind::SharedBase:
    return kSharedApertureBase;
  case OpKind::SharedLimit:
    return kSharedApertureBase + kApertureSize - 1;
  case OpKind::PrivateBase:
    return kPrivateApertureBase;
  case OpKind::PrivateLimit:
    return kPrivateApertureBase + kApertureSize - 1;
  default:
    return readS32(op);
  }
}

void ExecContext::writeS32(const Operand &op, uint32_t v) {
  if (op.kind == OpKind::Sgpr && op.reg != 125)
    w.sgpr[op.reg] = v;
  else if (op.kind == OpKind::Scc)
    w.scc = v & 1;
}

void ExecContext::writeS64(const Operand &op, uint64_t v) {
  if (op.kind == OpKind::Sgpr && op.reg != 125)
    w.setSgpr64(op.reg, v);
}

Expected<uint8_t *> ExecContext::global(const Inst &inst, unsigned lane,
                                        uint64_t addr, unsigned size,
                                        bool store) {
  const Buffer *b = mem.find(addr, size);
  if (!b)
    return fail(inst, Twine("lane ") + Twine(lane) + ": out-of-bounds " +
                          (store ? "store" : "load") + " of " +
                          mem.describe(addr, size));
  if (store && b->readOnly)
    return fail(inst, Twine("lane ") + Twine(lane) +
                          ": store to read-only buffer '" + b->name + "'");
  if (accesses)
    accesses->push_back(
        {addr, b->base, b->size, size, uint8_t(lane), store, false});
  return b->data + (addr - b->base);
}

Expected<uint8_t *> ExecContext::ldsAt(const Inst &inst, unsigned lane,
                                       uint64_t addr, unsigned size,
                                       bool store) {
  if (addr + size > ldsSize)
    return fail(inst, Twine("lane ") + Twine(lane) + ": out-of-bounds LDS " +
                          (store ? "store" : "load") + " of " + Twine(size) +
                          " bytes at " + Twine(addr) + " (workgroup LDS is " +
                          Twine(ldsSize) + " bytes)");
  if (accesses)
    accesses->push_back({addr, 0, 0, size, uint8_t(lane), store, true});
  return lds + addr;
}

Expected<uint8_t *> ExecContext::scratchAt(const Inst &inst, unsigned lane,
                                           uint64_t offset, unsigned size) {
  if (offset + size > w.privateSize || offset + size < offset)
    return fail(inst, Twine("lane ") + Twine(lane) +
                          ": out-of-bounds scratch access of " + Twine(size) +
                          " bytes at offset " + Twine(int64_t(offset)) +
                          " (private segment is " + Twine(w.privateSize) +
                          " bytes per lane)");
  return w.scratch.data() + size_t(lane) * w.privateSize + offset;
}

Expected<uint8_t *> ExecContext::flat(const Inst &inst, unsigned lane,
                                      uint64_t addr, unsigned size,
                                      bool store) {
  if (addr - kSharedApertureBase < kApertureSize)
    return ldsAt(inst, lane, addr - kSharedApertureBase, size, store);
  if (addr - kPrivateApertureBase < kApertureSize)
    return scratchAt(inst, lane, addr - kPrivateApertureBase, size);
  return global(inst, lane, addr, size, store);
}

} // namespace mlir::mlafp8::emu
