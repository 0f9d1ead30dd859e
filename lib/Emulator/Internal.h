//===- Internal.h - Emulator internals shared by the op files ---*- C++ -*-===//
//
// The decoded instruction (Inst), the per-wave execution context and the
// operand accessors every instruction family uses.
//
//===----------------------------------------------------------------------===//

#ifndef MLA_FP8_LIB_EMULATOR_INTERNAL_H
#define MLA_FP8_LIB_EMULATOR_INTERNAL_H

#include "Dpp.h"

#include "mla-fp8/Emulator/Emulator.h"
#include "mla-fp8/Reference/Formats.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/Error.h"

#include "llvm/ADT/bit.h"
#include <cmath>
#include <cstring>
#include <string>

namespace mlir::mlafp8::emu {

/// What an assembly operand names.
enum class OpKind : uint8_t {
  None,
  Sgpr,
  Vgpr,
  Agpr,
  Imm,
  Off,
  Scc,
  SharedBase,
  SharedLimit,
  PrivateBase,
  PrivateLimit,
  HwReg,
  Other,
};

/// One operand of a decoded instruction.
struct Operand {
  OpKind kind = OpKind::None;
  /// First register (SGPR slots use the operand encoding, see WaveState).
  uint16_t reg = 0;
  /// Width in dwords.
  uint8_t width = 1;
  bool neg = false, abs = false, sext = false;
  /// The immediate is a float inline constant (its value is `fimm`); its bits
  /// depend on the width of the operand that reads it.
  bool isFloat = false;
  int64_t imm = 0;
  double fimm = 0;
  /// hwreg(id, offset, size).
  uint8_t hwId = 0, hwOffset = 0, hwSize = 32;

  bool isReg() const {
    return kind == OpKind::Sgpr || kind == OpKind::Vgpr || kind == OpKind::Agpr;
  }
  bool isVector() const { return kind == OpKind::Vgpr || kind == OpKind::Agpr; }
};

/// Instruction classes for the dynamic counts.
enum class InstClass : uint8_t {
  SALU,
  VALU,
  MFMA,
  SMEM,
  VMEM,
  LDS,
  Branch,
  Other
};

/// How the timing model (WaveTimeline.h) charges an instruction.
enum class TimingKind : uint8_t {
  Issue,        // one issue slot: SALU, branch, message
  Valu,         // full-rate VALU
  Valu64,       // full-rate VALU on 64-bit operands (counted apart)
  QuarterRate,  // transcendental or 32-bit integer multiply
  Nop,          // s_nop: its wait states
  Waitcnt,      // s_waitcnt: waits on its counters
  Barrier,      // s_barrier: joins the workgroup (Dispatch.cpp)
  Mfma,         // matrix pipe for Inst::mfmaCycles
  Smem,         // scalar load, lgkmcnt, out of order
  VmemLoad,     // vector load (or returning atomic), vmcnt, in order
  VmemStore,    // vector store or non-returning atomic, vmcnt and expcnt
  CacheControl, // buffer_wbl2 / buffer_inv: vmcnt, store latency
  Lds,          // LDS access: lgkmcnt, latency plus bank conflicts
  LdsCrossLane, // ds_swizzle / ds_permute / ds_bpermute: no banks
  End,          // s_endpgm
};

/// One memory access of an executing instruction, recorded for the timing
/// model: `lane`'s `size` bytes at `addr` in LDS or in the global buffer at
/// `bufferBase` (`bufferSize` bytes).
struct MemRecord {
  uint64_t addr = 0;
  uint64_t bufferBase = 0, bufferSize = 0;
  uint32_t size = 0;
  uint8_t lane = 0;
  bool store = false, lds = false;
};

struct Inst;
struct InstDef;
class ExecContext;
using Handler = llvm::Error (*)(ExecContext &, const Inst &);

/// SDWA selects.
enum SdwaSel : uint8_t { Byte0, Byte1, Byte2, Byte3, Word0, Word1, Dword };

/// A decoded instruction: mnemonic, operands in assembly order, modifiers.
struct Inst {
  uint64_t pc = 0;
  uint32_t size = 4;
  /// The canonical assembly text (LLVM's instruction printer).
  std::string text;
  /// Mnemonic without the encoding suffix (_e32, _e64, _dpp, _sdwa).
  std::string mnemonic;
  /// The mnemonic's row of the instruction table (InstTable.h), or null if
  /// the emulator lacks it; handler and cls are copied from it.
  const InstDef *def = nullptr;
  Handler handler = nullptr;
  InstClass cls = InstClass::Other;
  llvm::SmallVector<Operand, 5> ops;
  /// Number of leading operands that are results (1, or 2 for carry-out and
  /// div_scale forms); the first source is ops[numDefs].
  uint8_t numDefs = 1;

  int32_t offset = 0;
  uint8_t offset0 = 0, offset1 = 0;
  bool clamp = false;
  /// 0 none, 1 mul:2, 2 mul:4, 3 div:2.
  uint8_t omod = 0;
  /// op_sel / op_sel_hi / neg_lo / neg_hi, bit i = printed position i.
  uint8_t opSel = 0, opSelHi = 0, negLo = 0, negHi = 0;
  uint8_t opSelCount = 0;
  bool hasOpSelHi = false;
  bool dpp = false;
  uint16_t dppCtrl = dpp::QuadPermIdentity;
  uint8_t rowMask = 0xf, bankMask = 0xf;
  bool boundCtrl = false;
  bool sdwa = false;
  uint8_t dstSel = Dword, dstUnused = 0, src0Sel = Dword, src1Sel = Dword;
  bool offen = false, idxen = false, sc0 = false, sc1 = false, nt = false,
       lds = false, gds = false;
  uint8_t cbsz = 0, abid = 0, blgp = 0;
  /// ds_swizzle_b32 offset (raw 16-bit pattern).
  uint16_t swizzle = 0;
  /// v_bitop3 truth table.
  uint8_t bitop3 = 0;
  /// s_waitcnt's counters, -1 where it does not wait on one.
  int8_t waitVm = -1, waitLgkm = -1, waitExp = -1;
  /// The timing model's view (assignTimingKind): its kind and, for an MFMA,
  /// the cycles it holds the matrix pipe.
  TimingKind timing = TimingKind::Issue;
  uint16_t mfmaCycles = 0;

  /// The i-th source operand.
  const Operand &src(unsigned i) const { return ops[numDefs + i]; }
  unsigned numSrcs() const { return ops.size() - numDefs; }
};

/// Helpers for bit casts.
inline float asF32(uint32_t b) { return llvm::bit_cast<float>(b); }
inline uint32_t bitsF32(float f) { return llvm::bit_cast<uint32_t>(f); }
inline double asF64(uint64_t b) { return llvm::bit_cast<double>(b); }
inline uint64_t bitsF64(double d) { return llvm::bit_cast<uint64_t>(d); }

/// IEEE half conversions (RNE), via the Reference library.
float halfToFloat(uint16_t h);
uint16_t floatToHalf(float f);

/// Bits of an immediate read as 16, 32 or 64 bits.
uint16_t immBits16(const Operand &op);
uint32_t immBits32(const Operand &op);
uint64_t immBits64(const Operand &op);

/// The Reference format of the chip's fp8 (E4M3) or bf8 (E5M2) values, as the
/// chip table names it.
FP8Format getChipFP8Format(const ChipInfo &chip, bool bf8);

/// The fixed values the emulator gives the aperture registers.
constexpr uint64_t kSharedApertureBase = 0x1000000000000ull;
constexpr uint64_t kPrivateApertureBase = 0x2000000000000ull;
constexpr uint64_t kApertureSize = 0x100000000ull;

/// The state of one executing wave plus what it can reach.
class ExecContext {
public:
  ExecContext(WaveState &w, DeviceMemory &mem, uint8_t *lds, uint32_t ldsSize,
              ExecStats &stats, const ChipInfo &chip)
      : w(w), mem(mem), lds(lds), ldsSize(ldsSize), stats(stats), chip(chip),
        fp8Format(getChipFP8Format(chip, /*bf8=*/false)),
        bf8Format(getChipFP8Format(chip, /*bf8=*/true)) {}

  WaveState &w;
  DeviceMemory &mem;
  uint8_t *lds;
  uint32_t ldsSize;
  ExecStats &stats;
  const ChipInfo &chip;
  /// The formats the chip's fp8 (E4M3) and bf8 (E5M2) operands use.
  FP8Format fp8Format, bf8Format;
  /// Set by branches; otherwise the next instruction.
  uint64_t nextPc = 0;
  /// When the timing model runs: every LDS and global access of the current
  /// instruction is appended here.
  std::vector<MemRecord> *accesses = nullptr;

  /// An error that names the instruction, its address and the wave.
  llvm::Error fail(const Inst &inst, const llvm::Twine &msg) const;

  // Scalar operands.
  uint32_t readS32(const Operand &op) const;
  uint64_t readS64(const Operand &op) const;
  void writeS32(const Operand &op, uint32_t v);
  void writeS64(const Operand &op, uint64_t v);

  /// Raw dword `i` of a (possibly scalar or constant) operand in `lane`.
  uint32_t readRaw32(const Operand &op, unsigned lane, unsigned i = 0) const {
    switch (op.kind) {
    case OpKind::Vgpr:
      return w.vgpr[(op.reg + i) * 64 + lane];
    case OpKind::Agpr:
      return w.agpr[(op.reg + i) * 64 + lane];
    case OpKind::Imm:
      return i == 0 ? immBits32(op) : 0;
    default:
      return i == 0 ? readS32(op) : uint32_t(readS64(op) >> 32);
    }
  }
  uint64_t readRaw64(const Operand &op, unsigned lane) const {
    if (op.kind == OpKind::Imm)
      return immBits64(op);
    if (op.isVector())
      return readRaw32(op, lane, 0) | (uint64_t(readRaw32(op, lane, 1)) << 32);
    return readS64(op);
  }
  uint32_t &vreg(const Operand &op, unsigned lane, unsigned i = 0) {
    return op.kind == OpKind::Agpr ? w.agpr[(op.reg + i) * 64 + lane]
                                   : w.vgpr[(op.reg + i) * 64 + lane];
  }

  bool fp16Ovfl() const { return (w.mode >> 23) & 1; }
  bool ieeeMode() const { return (w.mode >> 9) & 1; }

  // Checked memory. `what` is "load"/"store"/"atomic".
  llvm::Expected<uint8_t *> global(const Inst &inst, unsigned lane,
                                   uint64_t addr, unsigned size, bool store);
  llvm::Expected<uint8_t *> ldsAt(const Inst &inst, unsigned lane,
                                  uint64_t addr, unsigned size, bool store);
  llvm::Expected<uint8_t *> scratchAt(const Inst &inst, unsigned lane,
                                      uint64_t offset, unsigned size);
  /// Flat address: routed to LDS, scratch or global by aperture.
  llvm::Expected<uint8_t *> flat(const Inst &inst, unsigned lane, uint64_t addr,
                                 unsigned size, bool store);
};

/// A VALU lane being computed: source accessors with DPP/SDWA/modifiers and
/// result writers.
struct Lane {
  ExecContext &c;
  const Inst &I;
  unsigned lane;
  /// Lane that src0 reads (DPP), or -1 for "reads zero".
  int src0Lane;
  /// DPP: src0's dwords for all lanes, captured before any lane writes (the
  /// destination may be the source).
  const uint32_t *dppSrc = nullptr;

  /// Raw 32 bits of source i after DPP lane selection and SDWA select.
  uint32_t raw32(unsigned i) const {
    const Operand &op = I.src(i);
    uint32_t v;
    if (i == 0 && I.dpp)
      v = src0Lane < 0 ? 0 : dppSrc[src0Lane];
    else
      v = c.readRaw32(op, lane);
    if (I.sdwa && i < 2)
      v = sdwaSelect(v, i == 0 ? I.src0Sel : I.src1Sel, op.sext);
    return v;
  }
  static uint32_t sdwaSelect(uint32_t v, uint8_t sel, bool sext) {
    switch (sel) {
    case Byte0:
    case Byte1:
    case Byte2:
    case Byte3: {
      uint32_t b = (v >> (8 * sel)) & 0xff;
      return sext ? uint32_t(int32_t(int8_t(b))) : b;
    }
    case Word0:
    case Word1: {
      uint32_t h = (v >> (16 * (sel - Word0))) & 0xffff;
      return sext ? uint32_t(int32_t(int16_t(h))) : h;
    }
    default:
      return v;
    }
  }
  uint32_t u32(unsigned i) const { return raw32(i); }
  int32_t i32(unsigned i) const { return int32_t(raw32(i)); }
  /// f32 source with abs/neg applied.
  float f32(unsigned i) const {
    uint32_t b = raw32(i);
    const Operand &op = I.src(i);
    if (op.abs)
      b &= 0x7fffffffu;
    if (op.neg)
      b ^= 0x80000000u;
    return asF32(b);
  }
  uint64_t u64(unsigned i) const {
    const Operand &op = I.src(i);
    if (i == 0 && I.dpp)
      return src0Lane < 0
                 ? 0
                 : dppSrc[src0Lane] | (uint64_t(dppSrc[64 + src0Lane]) << 32);
    return c.readRaw64(op, lane);
  }
  double f64(unsigned i) const {
    uint64_t b = u64(i);
    const Operand &op = I.src(i);
    if (op.abs)
      b &= ~(1ull << 63);
    if (op.neg)
      b ^= 1ull << 63;
    return asF64(b);
  }
  /// 16-bit source: the low half, or the high half when op_sel selects it.
  uint16_t u16(unsigned i) const {
    const Operand &op = I.src(i);
    if (op.kind == OpKind::Imm)
      return immBits16(op);
    uint32_t v = raw32(i);
    return uint16_t((I.opSel >> i) & 1 ? v >> 16 : v);
  }
  float f16(unsigned i) const {
    uint16_t b = u16(i);
    const Operand &op = I.src(i);
    if (op.abs)
      b &= 0x7fff;
    if (op.neg)
      b ^= 0x8000;
    return halfToFloat(b);
  }

  /// Writes the 32-bit result, merging per SDWA dst_sel/dst_unused.
  void setU32(uint32_t v) const {
    const Operand &d = I.ops[0];
    uint32_t &r = c.vreg(d, lane);
    if (I.sdwa && I.dstSel != Dword) {
      unsigned shift, bits;
      if (I.dstSel <= Byte3) {
        shift = 8 * I.dstSel;
        bits = 8;
      } else {
        shift = 16 * (I.dstSel - Word0);
        bits = 16;
      }
      uint32_t mask = ((1u << bits) - 1) << shift;
      uint32_t val = (v << shift) & mask;
      if (I.dstUnused == 2)
        r = (r & ~mask) | val;
      else if (I.dstUnused == 1) {
        uint32_t top = shift + bits;
        int32_t s = int32_t(val << (32 - top)) >> (32 - top);
        r = uint32_t(s) & ~((1u << shift) - 1);
      } else
        r = val;
      return;
    }
    r = v;
  }
  /// Writes an f32 result after clamp and output modifiers.
  void setF32(float f) const {
    if (I.omod == 1)
      f *= 2.0f;
    else if (I.omod == 2)
      f *= 4.0f;
    else if (I.omod == 3)
      f *= 0.5f;
    if (I.clamp)
      f = std::isnan(f) ? 0.0f : std::fmin(std::fmax(f, 0.0f), 1.0f);
    setU32(bitsF32(f));
  }
  void setU64(uint64_t v) const {
    c.vreg(I.ops[0], lane, 0) = uint32_t(v);
    c.vreg(I.ops[0], lane, 1) = uint32_t(v >> 32);
  }
  void setF64(double d) const {
    if (I.omod == 1)
      d *= 2.0;
    else if (I.omod == 2)
      d *= 4.0;
    else if (I.omod == 3)
      d *= 0.5;
    if (I.clamp)
      d = std::isnan(d) ? 0.0 : std::fmin(std::fmax(d, 0.0), 1.0);
    setU64(bitsF64(d));
  }
  /// A 16-bit result: low half (high half zeroed on gfx9), or the high half
  /// (low kept) when op_sel's destination bit is set.
  void setU16(uint16_t v) const {
    uint32_t &r = c.vreg(I.ops[0], lane);
    bool hi = I.opSelCount && ((I.opSel >> (I.opSelCount - 1)) & 1);
    if (I.sdwa) {
      setU32(v);
      return;
    }
    if (hi)
      r = (r & 0xffffu) | (uint32_t(v) << 16);
    else
      r = v;
  }
};

/// Runs `f(Lane&)` for every lane that executes: EXEC lanes, minus DPP lanes
/// that are masked off or read an invalid lane without bound_ctrl.
template <typename F>
inline void forEachLane(ExecContext &c, const Inst &I, F &&f) {
  uint64_t exec = c.w.getExec();
  if (!I.dpp) {
    while (exec) {
      unsigned lane = __builtin_ctzll(exec);
      exec &= exec - 1;
      Lane L{c, I, lane, int(lane)};
      f(L);
    }
    return;
  }
  uint32_t snap[128];
  const Operand &src0 = I.src(0);
  for (unsigned lane = 0; lane < 64; ++lane) {
    snap[lane] = c.readRaw32(src0, lane, 0);
    snap[64 + lane] = src0.width > 1 ? c.readRaw32(src0, lane, 1) : 0;
  }
  for (unsigned lane = 0; lane < 64; ++lane) {
    if (!((exec >> lane) & 1))
      continue;
    if (!((I.rowMask >> (lane / 16)) & 1) ||
        !((I.bankMask >> ((lane >> 2) & 3)) & 1))
      continue;
    int src = dpp::getSourceLane(I.dppCtrl, lane);
    if (src < 0 && !I.boundCtrl)
      continue;
    Lane L{c, I, lane, src, snap};
    f(L);
  }
}

/// Parses LLVM's printed assembly into `inst`: mnemonic, operands, modifiers
/// and the mnemonic's table row (null if the emulator lacks the mnemonic).
/// Fails on syntax it does not understand.
llvm::Error parseAssembly(llvm::StringRef text, Inst &inst);

} // namespace mlir::mlafp8::emu

#endif // MLA_FP8_LIB_EMULATOR_INTERNAL_H
