//===- AsmParse.cpp - Operands and modifiers from LLVM's printed asm ------===//
//
// The disassembler's MCInst operands follow target-private layouts (modifier
// immediates interleaved with sources, named-operand tables that are not
// installed). The instruction printer's output is the documented assembly
// syntax instead, so the emulator takes operands and modifiers from it; each
// instruction is printed and parsed once.
//
//===----------------------------------------------------------------------===//

#include "InstTable.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSwitch.h"

using namespace llvm;

namespace mlir::mlafp8::emu {

/// Splits at commas and spaces outside brackets and parentheses.
static SmallVector<StringRef, 12> tokenize(StringRef s) {
  SmallVector<StringRef, 12> toks;
  int depth = 0;
  size_t start = 0;
  auto flush = [&](size_t end) {
    StringRef t = s.slice(start, end).trim();
    if (!t.empty())
      toks.push_back(t);
  };
  for (size_t i = 0; i < s.size(); ++i) {
    char ch = s[i];
    if (ch == '(' || ch == '[')
      ++depth;
    else if (ch == ')' || ch == ']')
      --depth;
    else if (depth == 0 && (ch == ',' || ch == ' ' || ch == '\t')) {
      flush(i);
      start = i + 1;
    }
  }
  flush(s.size());
  return toks;
}

static bool parseInt(StringRef s, int64_t &v) {
  bool neg = s.consume_front("-");
  uint64_t u;
  if (s.starts_with_insensitive("0x")) {
    if (s.drop_front(2).getAsInteger(16, u))
      return false;
  } else if (s.getAsInteger(10, u)) {
    return false;
  }
  v = neg ? -int64_t(u) : int64_t(u);
  return true;
}

/// "[1,0,1]" -> bit mask, count.
static bool parseBitList(StringRef s, uint8_t &mask, uint8_t &count) {
  if (!s.consume_front("[") || !s.consume_back("]"))
    return false;
  SmallVector<StringRef, 4> parts;
  s.split(parts, ',');
  mask = 0;
  count = parts.size();
  for (unsigned i = 0; i < parts.size(); ++i) {
    int64_t v;
    if (!parseInt(parts[i].trim(), v))
      return false;
    if (v)
      mask |= 1u << i;
  }
  return true;
}

/// Register name -> operand ("v[2:5]", "s7", "vcc", ...).
static bool parseRegister(StringRef t, Operand &op) {
  struct Named {
    const char *name;
    OpKind kind;
    uint16_t reg;
    uint8_t width;
  };
  static const Named named[] = {
      {"vcc", OpKind::Sgpr, 106, 2},
      {"vcc_lo", OpKind::Sgpr, 106, 1},
      {"vcc_hi", OpKind::Sgpr, 107, 1},
      {"exec", OpKind::Sgpr, 126, 2},
      {"exec_lo", OpKind::Sgpr, 126, 1},
      {"exec_hi", OpKind::Sgpr, 127, 1},
      {"m0", OpKind::Sgpr, 124, 1},
      {"null", OpKind::Sgpr, 125, 1},
      {"flat_scratch", OpKind::Sgpr, 102, 2},
      {"flat_scratch_lo", OpKind::Sgpr, 102, 1},
      {"flat_scratch_hi", OpKind::Sgpr, 103, 1},
      {"xnack_mask", OpKind::Sgpr, 104, 2},
      {"xnack_mask_lo", OpKind::Sgpr, 104, 1},
      {"xnack_mask_hi", OpKind::Sgpr, 105, 1},
      {"scc", OpKind::Scc, 0, 1},
      {"src_scc", OpKind::Scc, 0, 1},
      {"off", OpKind::Off, 0, 1},
      {"src_shared_base", OpKind::SharedBase, 0, 1},
      {"src_shared_limit", OpKind::SharedLimit, 0, 1},
      {"src_private_base", OpKind::PrivateBase, 0, 1},
      {"src_private_limit", OpKind::PrivateLimit, 0, 1},
  };
  for (const Named &n : named)
    if (t == n.name) {
      op.kind = n.kind;
      op.reg = n.reg;
      op.width = n.width;
      return true;
    }
  OpKind kind;
  unsigned base = 0;
  if (t.consume_front("ttmp")) {
    kind = OpKind::Sgpr;
    base = 108;
  } else if (t.consume_front("v")) {
    kind = OpKind::Vgpr;
  } else if (t.consume_front("s")) {
    kind = OpKind::Sgpr;
  } else if (t.consume_front("a")) {
    kind = OpKind::Agpr;
  } else {
    return false;
  }
  unsigned lo, hi;
  if (t.consume_front("[")) {
    auto [a, b] = t.split(':');
    if (!b.consume_back("]") || a.getAsInteger(10, lo) ||
        b.getAsInteger(10, hi) || hi < lo)
      return false;
  } else {
    if (t.getAsInteger(10, lo))
      return false;
    hi = lo;
  }
  op.kind = kind;
  op.reg = base + lo;
  op.width = hi - lo + 1;
  return true;
}

/// An operand token: register with source modifiers, or an immediate.
static bool parseOperand(StringRef t, Operand &op) {
  if (t.starts_with("hwreg(")) {
    // hwreg(HW_REG_MODE, 23, 1) or hwreg(HW_REG_MODE).
    StringRef body = t.drop_front(6).drop_back(1);
    SmallVector<StringRef, 3> parts;
    body.split(parts, ',');
    StringRef id = parts[0].trim();
    int64_t v = 0;
    op.kind = OpKind::HwReg;
    op.hwId = StringSwitch<uint8_t>(id)
                  .Case("HW_REG_MODE", 1)
                  .Case("HW_REG_STATUS", 2)
                  .Case("HW_REG_TRAPSTS", 3)
                  .Case("HW_REG_HW_ID", 4)
                  .Case("HW_REG_GPR_ALLOC", 5)
                  .Case("HW_REG_LDS_ALLOC", 6)
                  .Case("HW_REG_IB_STS", 7)
                  .Default(parseInt(id, v) ? uint8_t(v) : 0xff);
    if (parts.size() == 3) {
      int64_t off, size;
      if (!parseInt(parts[1].trim(), off) || !parseInt(parts[2].trim(), size))
        return false;
      op.hwOffset = off;
      op.hwSize = size;
    }
    return true;
  }
  bool neg = false, abs = false, sext = false;
  if (t.starts_with("sext(") && t.ends_with(")")) {
    sext = true;
    t = t.drop_front(5).drop_back(1);
  }
  if (t.starts_with("neg(") && t.ends_with(")")) {
    neg = true;
    t = t.drop_front(4).drop_back(1);
  }
  if (t.starts_with("abs(") && t.ends_with(")")) {
    abs = true;
    t = t.drop_front(4).drop_back(1);
  }
  if (t.size() > 1 && t[0] == '-' && !isDigit(t[1])) {
    neg = true;
    t = t.drop_front(1);
  }
  if (t.size() > 2 && t.front() == '|' && t.back() == '|') {
    abs = true;
    t = t.drop_front(1).drop_back(1);
  }
  op.neg = neg;
  op.abs = abs;
  op.sext = sext;
  if (parseRegister(t, op))
    return true;
  int64_t v;
  if (parseInt(t, v)) {
    op.kind = OpKind::Imm;
    op.imm = v;
    return true;
  }
  if (t.contains('.')) {
    double d;
    if (t.getAsDouble(d))
      return false;
    op.kind = OpKind::Imm;
    op.isFloat = true;
    op.fimm = d;
    return true;
  }
  return false;
}

static bool parseSdwaSel(StringRef v, uint8_t &sel) {
  auto s = StringSwitch<int>(v)
               .Case("BYTE_0", Byte0)
               .Case("BYTE_1", Byte1)
               .Case("BYTE_2", Byte2)
               .Case("BYTE_3", Byte3)
               .Case("WORD_0", Word0)
               .Case("WORD_1", Word1)
               .Case("DWORD", Dword)
               .Default(-1);
  if (s < 0)
    return false;
  sel = s;
  return true;
}

/// ds_swizzle_b32 "swizzle(...)" macro -> raw offset.
static bool parseSwizzle(StringRef s, uint16_t &out) {
  if (!s.consume_front("swizzle(") || !s.consume_back(")"))
    return false;
  SmallVector<StringRef, 5> parts;
  s.split(parts, ',');
  StringRef mode = parts[0].trim();
  auto arg = [&](unsigned i) -> int64_t {
    int64_t v = 0;
    if (i < parts.size())
      parseInt(parts[i].trim(), v);
    return v;
  };
  if (mode == "QUAD_PERM") {
    out = 0x8000 | arg(1) | (arg(2) << 2) | (arg(3) << 4) | (arg(4) << 6);
    return true;
  }
  unsigned andMask = 0x1f, orMask = 0, xorMask = 0;
  if (mode == "SWAP") {
    xorMask = arg(1);
  } else if (mode == "REVERSE") {
    xorMask = arg(1) - 1;
  } else if (mode == "BROADCAST") {
    andMask = 0x1f & ~(arg(1) - 1);
    orMask = arg(2);
  } else if (mode == "BITMASK_PERM") {
    StringRef m = parts.size() > 1 ? parts[1].trim() : "";
    m.consume_front("\"");
    m.consume_back("\"");
    if (m.size() != 5)
      return false;
    andMask = 0;
    for (unsigned i = 0; i < 5; ++i) {
      unsigned bit = 1u << (4 - i);
      switch (m[i]) {
      case '0':
        break;
      case '1':
        orMask |= bit;
        break;
      case 'p':
        andMask |= bit;
        break;
      case 'i':
        andMask |= bit;
        xorMask |= bit;
        break;
      default:
        return false;
      }
    }
  } else {
    return false;
  }
  out = andMask | (orMask << 5) | (xorMask << 10);
  return true;
}

/// Applies one modifier token; false if unknown.
static bool parseModifier(StringRef t, Inst &inst) {
  static const char *flags[] = {
      "offen", "idxen", "glc",   "slc",   "sc0",        "sc1",
      "nt",    "lds",   "gds",   "clamp", "row_mirror", "row_half_mirror",
      "tfe",   "lwe",   "addr64"};
  for (const char *f : flags) {
    if (t != f)
      continue;
    if (t == "offen")
      inst.offen = true;
    else if (t == "idxen")
      inst.idxen = true;
    else if (t == "glc" || t == "sc0")
      inst.sc0 = true;
    else if (t == "slc" || t == "sc1")
      inst.sc1 = true;
    else if (t == "nt")
      inst.nt = true;
    else if (t == "lds")
      inst.lds = true;
    else if (t == "gds")
      inst.gds = true;
    else if (t == "clamp")
      inst.clamp = true;
    else if (t == "row_mirror") {
      inst.dpp = true;
      inst.dppCtrl = dpp::RowMirror;
    } else if (t == "row_half_mirror") {
      inst.dpp = true;
      inst.dppCtrl = dpp::RowHalfMirror;
    } else
      return false; // tfe/lwe/addr64: not modelled
    return true;
  }
  // s_waitcnt counters: kept for the timing model.
  for (auto [name, field] : {std::pair{"vmcnt(", &inst.waitVm},
                             std::pair{"lgkmcnt(", &inst.waitLgkm},
                             std::pair{"expcnt(", &inst.waitExp}}) {
    StringRef arg = t;
    if (!arg.consume_front(name) || !arg.consume_back(")"))
      continue;
    unsigned count;
    if (arg.getAsInteger(10, count) || count > 127)
      return false;
    *field = int8_t(count);
    return true;
  }
  auto [key, val] = t.split(':');
  if (val.empty())
    return false;
  int64_t v = 0;
  uint8_t count;
  if (key == "offset") {
    if (val.starts_with("swizzle("))
      return parseSwizzle(val, inst.swizzle);
    if (!parseInt(val, v))
      return false;
    inst.offset = int32_t(v);
    inst.swizzle = uint16_t(v);
    return true;
  }
  if (key == "offset0" || key == "offset1") {
    if (!parseInt(val, v))
      return false;
    (key == "offset0" ? inst.offset0 : inst.offset1) = uint8_t(v);
    return true;
  }
  if (key == "mul" || key == "div") {
    if (!parseInt(val, v))
      return false;
    inst.omod = key == "div" ? 3 : v == 2 ? 1 : 2;
    return true;
  }
  if (key == "op_sel")
    return parseBitList(val, inst.opSel, inst.opSelCount);
  if (key == "op_sel_hi") {
    inst.hasOpSelHi = true;
    return parseBitList(val, inst.opSelHi, count);
  }
  if (key == "neg_lo")
    return parseBitList(val, inst.negLo, count);
  if (key == "neg_hi")
    return parseBitList(val, inst.negHi, count);
  if (key == "quad_perm") {
    StringRef l = val;
    if (!l.consume_front("[") || !l.consume_back("]"))
      return false;
    SmallVector<StringRef, 4> parts;
    l.split(parts, ',');
    if (parts.size() != 4)
      return false;
    uint16_t ctrl = 0;
    for (unsigned i = 0; i < 4; ++i) {
      if (!parseInt(parts[i].trim(), v))
        return false;
      ctrl |= (v & 3) << (2 * i);
    }
    inst.dpp = true;
    inst.dppCtrl = ctrl;
    return true;
  }
  // "name:n" DPP controls; the wave shifts print n = 1 and encode no amount.
  struct DppKey {
    const char *name;
    dpp::Ctrl base;
    bool addsAmount;
  };
  static const DppKey dppKeys[] = {{"row_shl", dpp::RowShl, true},
                                   {"row_shr", dpp::RowShr, true},
                                   {"row_ror", dpp::RowRor, true},
                                   {"wave_shl", dpp::WaveShl1, false},
                                   {"wave_rol", dpp::WaveRol1, false},
                                   {"wave_shr", dpp::WaveShr1, false},
                                   {"wave_ror", dpp::WaveRor1, false},
                                   {"row_newbcast", dpp::RowNewBcast, true}};
  for (const DppKey &k : dppKeys) {
    if (key != k.name)
      continue;
    if (!parseInt(val, v))
      return false;
    inst.dpp = true;
    inst.dppCtrl = k.base + (k.addsAmount ? v : 0);
    return true;
  }
  if (key == "row_bcast") {
    if (!parseInt(val, v))
      return false;
    inst.dpp = true;
    inst.dppCtrl = v == 15 ? dpp::RowBcast15 : dpp::RowBcast31;
    return true;
  }
  if (key == "row_mask" || key == "bank_mask") {
    if (!parseInt(val, v))
      return false;
    (key == "row_mask" ? inst.rowMask : inst.bankMask) = uint8_t(v);
    inst.dpp = true;
    return true;
  }
  if (key == "bound_ctrl") {
    // Both spellings set the bit (ISA-NOTES §3).
    inst.boundCtrl = true;
    return true;
  }
  if (key == "fi")
    return true;
  if (key == "dst_sel") {
    inst.sdwa = true;
    return parseSdwaSel(val, inst.dstSel);
  }
  if (key == "src0_sel") {
    inst.sdwa = true;
    return parseSdwaSel(val, inst.src0Sel);
  }
  if (key == "src1_sel") {
    inst.sdwa = true;
    return parseSdwaSel(val, inst.src1Sel);
  }
  if (key == "dst_unused") {
    inst.sdwa = true;
    inst.dstUnused = StringSwitch<uint8_t>(val)
                         .Case("UNUSED_PAD", 0)
                         .Case("UNUSED_SEXT", 1)
                         .Case("UNUSED_PRESERVE", 2)
                         .Default(0);
    return true;
  }
  if (key == "bitop3") {
    if (!parseInt(val, v))
      return false;
    inst.bitop3 = uint8_t(v);
    return true;
  }
  if (key == "cbsz" || key == "abid" || key == "blgp") {
    if (!parseInt(val, v))
      return false;
    (key == "cbsz"   ? inst.cbsz
     : key == "abid" ? inst.abid
                     : inst.blgp) = uint8_t(v);
    return true;
  }
  return false;
}

Error parseAssembly(StringRef text, Inst &inst) {
  text = text.trim();
  size_t sp = text.find_first_of(" \t");
  StringRef mnem = text.substr(0, sp);
  StringRef rest = sp == StringRef::npos ? "" : text.substr(sp + 1);
  StringRef base = mnem;
  for (StringRef suffix : {"_e32", "_e64", "_dpp", "_sdwa"})
    if (base.consume_back(suffix))
      break;
  if (mnem.ends_with("_sdwa"))
    inst.sdwa = true;
  if (mnem.ends_with("_dpp"))
    inst.dpp = true;
  inst.mnemonic = base.str();
  inst.def = getInstTable().lookup(base);
  Operands signature = inst.def ? inst.def->operands : Operands::Def;
  bool inModifiers = false;
  for (StringRef t : tokenize(rest)) {
    Operand op;
    if (!inModifiers && parseOperand(t, op)) {
      inst.ops.push_back(op);
      continue;
    }
    inModifiers = true;
    if (!parseModifier(t, inst))
      return createStringError("cannot parse '%s' in '%s'", t.str().c_str(),
                               text.str().c_str());
  }
  if (signature == Operands::Packed && !inst.hasOpSelHi)
    inst.opSelHi = 0x7;
  inst.numDefs = getNumDefs(signature);
  if (inst.numDefs > inst.ops.size())
    inst.numDefs = inst.ops.size();
  return Error::success();
}

} // namespace mlir::mlafp8::emu
