//===- MFMA.cpp - Matrix fused multiply-add -------------------------------===//
//
// Operand and result layouts follow ISA-NOTES §4 (checked there against AMD's
// matrix instruction calculator).
//
// Numerics:
//  - gfx942 (CDNA3): the bit-accurate model of the hardware datapath published
//    with MMA-Sim (validated on MI300). Per output, chunks of 16 k (fp8) or
//    min(8, K) k (bf16/f16) in ascending order; exact products split into
//    significand and exponent; for fp8 the even-k and odd-k products form two
//    groups, each aligned to its largest exponent with every product truncated
//    toward zero at 24 fractional bits; the groups combine with floor at 24
//    bits, the partial sum is floored at 31 bits and the accumulator at 24 bits
//    (dropped when 25+ binades below); one RNE to f32 per chunk. bf16/f16 use
//    one group and keep the accumulator.
//  - int8 forms (v_mfma_i32_*_i8): exact, two's complement int32 sums.
//  - gfx950 (CDNA4): no public bit-accurate model exists. AMD's CDNA4 ISA
//    guide states only f32 accumulation with RNE forced and narrow denormals
//    kept (ISA-NOTES §4); LLVM's AMDGPU docs and MC tests cover encodings,
//    not numerics; MMA-Sim (arXiv 2511.10909) models CDNA1-3, not CDNA4. The
//    emulator forms exact products, sums each chunk of 16 k plus the
//    accumulator in f64 and rounds once to f32 (RNE) per chunk. CDNA3's
//    truncating datapath differs from this by at most 2^-24 of
//    |C| + sum |a*b| on fp8 operands (MfmaTest), f32 accumulation noise that
//    the kernel tolerances cover.
//
//===----------------------------------------------------------------------===//

#include "InstTable.h"

#include "mla-fp8/Reference/Formats.h"

#include "llvm/ADT/StringRef.h"

#include <array>
#include <cmath>
#include <limits>
#include <utility>

using namespace llvm;

namespace mlir::mlafp8::emu {
namespace {

using Ctx = ExecContext;

enum class ElemKind : uint8_t { FP8, BF8, BF16, F16 };

/// A decoded input element: value, and the significand/exponent split the
/// CDNA3 model aligns on (significand in [1, 2), or scaled below 1 for
/// subnormals at the format's minimum exponent; zero gets exponent -999).
struct Elem {
  double value;
  double sig;
  int exp;
  /// sig * 2^10 (exact for every input format; 0 for zero).
  int32_t mant;
};

/// Exponent of an absent term (zero or an empty group).
constexpr int kNoExp = -(1 << 20);

Elem splitElem(double v, int minExp) {
  Elem e{v, 0.0, kNoExp, 0};
  if (v == 0 || std::isnan(v) || std::isinf(v))
    return e;
  int ex;
  double m = std::frexp(v, &ex); // v = m * 2^ex, 0.5 <= |m| < 1
  m *= 2;
  ex -= 1;
  if (ex < minExp) {
    m = std::ldexp(m, ex - minExp);
    ex = minExp;
  }
  e.sig = m;
  e.exp = ex;
  e.mant = int32_t(std::ldexp(m, 10));
  return e;
}

/// floor(v * 2^sh) for a signed integer, any shift.
inline int64_t shiftFloor(int64_t v, int sh) {
  if (sh >= 0)
    // Shifted as unsigned: a left shift of a negative value is undefined.
    return sh >= 40 ? 0 : int64_t(uint64_t(v) << sh); // never needed larger
  if (sh <= -63)
    return v < 0 ? -1 : 0;
  return v >> -sh; // arithmetic: floor
}

/// trunc(v * 2^sh) (toward zero).
inline int64_t shiftTrunc(int64_t v, int sh) {
  if (sh >= 0)
    return int64_t(uint64_t(v) << sh);
  if (sh <= -63)
    return 0;
  return v < 0 ? -((-v) >> -sh) : v >> -sh;
}

/// Per-format decode tables for the 8-bit formats (256 entries each).
struct Fp8Table {
  std::array<Elem, 256> e;
};

const Fp8Table &fp8Table(FP8Format f) {
  static const auto tables = [] {
    std::array<Fp8Table, 4> t;
    for (unsigned fi = 0; fi < 4; ++fi) {
      auto fmt = FP8Format(fi);
      int minExp = 1 - getFP8Bias(fmt);
      for (unsigned b = 0; b < 256; ++b)
        t[fi].e[b] = splitElem(decodeFP8(uint8_t(b), fmt), minExp);
    }
    return t;
  }();
  return tables[unsigned(f)];
}

/// Element (row r of A or column r of B, index k) of an operand, per layout.
struct Layout {
  unsigned m;         // rows of the block (16 or 32)
  unsigned k;         // K of the instruction
  bool f8f6f4;        // gfx950 8-VGPR fp8 layout
  unsigned elemBytes; // 1 (fp8) or 2 (bf16/f16)
  unsigned
      kPerLaneGroup; // consecutive k held by one lane (8 fp8, 4 or 8 16-bit)
};

/// Returns (lane, byte offset within the operand's VGPRs) of element (r, k).
inline void locate(const Layout &l, unsigned r, unsigned k, unsigned &lane,
                   unsigned &byte) {
  if (l.f8f6f4) {
    if (l.m == 16) {
      lane = r + 16 * ((k % 64) / 16);
      byte = 16 * (k / 64) + k % 16;
    } else {
      lane = r + 32 * ((k % 32) / 16);
      byte = 16 * (k / 32) + k % 16;
    }
    return;
  }
  unsigned g = l.kPerLaneGroup;
  lane = r + l.m * (k / g);
  byte = (k % g) * l.elemBytes;
}

/// CDNA3 fused dot-add of one chunk: products of a[t]*b[t], t < n, plus c.
/// Integer form of the model: products are ma*mb * 2^(ea+eb-20); a group sum
/// is held in units of 2^(eMax-24), the chunk sum in units of 2^(maxE-31).
float cdna3Chunk(const Elem *a, const Elem *b, unsigned n, float c, bool fp8,
                 bool mayBeSpecial) {
  // Specials (NaN/Inf inputs or an f32 overflow): the f64 sum decides.
  if (mayBeSpecial || !std::isfinite(c)) {
    double exact = double(c);
    for (unsigned t = 0; t < n; ++t)
      exact += a[t].value * b[t].value;
    if (std::isnan(exact) || std::isinf(exact))
      return float(exact);
  }
  auto groupSum = [&](unsigned start, unsigned step, int &eMax) {
    eMax = kNoExp;
    for (unsigned t = start; t < n; t += step)
      if (a[t].mant && b[t].mant)
        eMax = std::max(eMax, a[t].exp + b[t].exp);
    int64_t s = 0;
    if (eMax == kNoExp)
      return s;
    for (unsigned t = start; t < n; t += step) {
      int64_t p = int64_t(a[t].mant) * b[t].mant;
      if (p)
        s += shiftTrunc(p, 4 + a[t].exp + b[t].exp - eMax);
    }
    return s;
  };
  int64_t s;
  int e;
  if (fp8) {
    int e0, e1;
    int64_t s0 = groupSum(0, 2, e0), s1 = groupSum(1, 2, e1);
    e = std::max(e0, e1);
    s = (s0 ? shiftFloor(s0, e0 - e) : 0) + (s1 ? shiftFloor(s1, e1 - e) : 0);
  } else {
    s = groupSum(0, 1, e);
  }
  // The accumulator: 24-bit significand (hidden bit included).
  uint32_t cb = bitsF32(c);
  int64_t mc = cb & 0x7fffff;
  int ec = int((cb >> 23) & 0xff);
  if (ec == 0)
    ec = mc ? -126 : kNoExp;
  else {
    mc |= 0x800000;
    ec -= 127;
  }
  if (cb >> 31)
    mc = -mc;
  int maxE = std::max(e, ec);
  if (maxE == kNoExp)
    return 0.0f;
  int64_t total = s ? shiftFloor(s, 7 + e - maxE) : 0;
  if (mc && (!fp8 || ec >= maxE - 25))
    total += shiftFloor(mc, 1 + ec - maxE) * 128;
  return float(std::ldexp(double(total), maxE - 31));
}

/// Exact products, one f32 rounding per chunk (the gfx950 model).
float exactChunk(const Elem *a, const Elem *b, unsigned n, float c) {
  double s = c;
  for (unsigned t = 0; t < n; ++t)
    s += a[t].value * b[t].value;
  return float(s);
}

/// (VGPR, lane) of accumulator element (i, j) of an M x M block
/// (ISA-NOTES §4's 16x16 and 32x32 output layouts).
template <unsigned M>
std::pair<unsigned, unsigned> accumulatorSlot(unsigned i, unsigned j) {
  if (M == 16)
    return {i % 4, j + 16 * (i / 4)};
  return {4 * (i / 8) + i % 4, j + 32 * ((i % 8) / 4)};
}

template <unsigned M, unsigned K, ElemKind KA, ElemKind KB, bool F8F6F4>
Error mfma(Ctx &c, const Inst &I) {
  constexpr bool is8 = KA == ElemKind::FP8 || KA == ElemKind::BF8;
  if (I.cbsz || I.abid || (I.blgp && !F8F6F4))
    return c.fail(I, "MFMA broadcast controls (cbsz/abid/blgp) are not "
                     "modelled");
  ElemKind ka = KA, kb = KB;
  if (F8F6F4) {
    // cbsz / blgp select the A / B formats: 0 E4M3, 1 E5M2; fp6/fp4 not
    // modelled.
    if (I.cbsz > 1 || I.blgp > 1)
      return c.fail(I, "f8f6f4 MFMA with fp6/fp4 operands is not modelled");
    ka = I.cbsz ? ElemKind::BF8 : ElemKind::FP8;
    kb = I.blgp ? ElemKind::BF8 : ElemKind::FP8;
  }
  bool isBf16 = KA == ElemKind::BF16;
  Layout layout;
  layout.m = M;
  layout.k = K;
  layout.f8f6f4 = F8F6F4;
  layout.elemBytes = is8 ? 1 : 2;
  // 16-bit operands: gfx942 forms hold 4 k per lane, the gfx950 forms
  // (16x16x32 / 32x32x16 bf16/f16) hold 8.
  layout.kPerLaneGroup = is8 ? 8 : (K * M == 512 ? 8 : 4);
  unsigned aRegs = I.src(0).width, bRegs = I.src(1).width;
  (void)aRegs;
  (void)bRegs;

  auto fetch = [&](const Operand &op, ElemKind kind, unsigned r, unsigned k,
                   int minExp16) -> Elem {
    unsigned lane, byte;
    locate(layout, r, k, lane, byte);
    uint32_t word = c.readRaw32(op, lane, byte / 4);
    if (kind == ElemKind::FP8 || kind == ElemKind::BF8) {
      uint8_t bits = uint8_t(word >> (8 * (byte % 4)));
      return fp8Table(kind == ElemKind::FP8 ? c.fp8Format : c.bf8Format)
          .e[bits];
    }
    uint16_t h = uint16_t(word >> (8 * (byte % 4)));
    double v = kind == ElemKind::BF16 ? bf16ToFloat(h) : f16ToFloat(h);
    return splitElem(v, minExp16);
  };
  int minExp16 = isBf16 ? -126 : -14;

  // Gather A (M x K) and B (K x N) once.
  static thread_local std::vector<Elem> A, B;
  A.resize(M * K);
  B.resize(M * K);
  for (unsigned r = 0; r < M; ++r)
    for (unsigned k = 0; k < K; ++k) {
      A[r * K + k] = fetch(I.src(0), ka, r, k, minExp16);
      B[r * K + k] = fetch(I.src(1), kb, r, k, minExp16);
    }
  // Non-finite inputs, or 16-bit inputs whose products may overflow f32, take
  // the slow path that detects specials.
  bool special = !is8;
  for (const Elem &e : A)
    special |= !std::isfinite(e.value);
  for (const Elem &e : B)
    special |= !std::isfinite(e.value);
  const Operand &cop = I.src(2);
  float out[M * M];
  unsigned chunk = is8 ? 16 : std::min(8u, K);
  bool cdna3 = c.chip.arch == Arch::CDNA3;
  for (unsigned i = 0; i < M; ++i)
    for (unsigned j = 0; j < M; ++j) {
      auto [reg, lane] = accumulatorSlot<M>(i, j);
      float acc = cop.kind == OpKind::Imm ? asF32(immBits32(cop))
                                          : asF32(c.readRaw32(cop, lane, reg));
      for (unsigned k0 = 0; k0 < K; k0 += chunk) {
        const Elem *a = &A[i * K + k0], *b = &B[j * K + k0];
        acc = cdna3 ? cdna3Chunk(a, b, chunk, acc, is8, special)
                    : exactChunk(a, b, chunk, acc);
      }
      out[reg * 64 + lane] = acc;
    }
  // D may alias C: write after all reads.
  const Operand &d = I.ops[0];
  for (unsigned reg = 0; reg < M * M / 64; ++reg)
    for (unsigned lane = 0; lane < 64; ++lane)
      c.vreg(d, lane, reg) = bitsF32(out[reg * 64 + lane]);
  return Error::success();
}

/// Integer MFMA: D = C + A * B with int8 operands and int32 accumulators,
/// exact products summed in two's complement (wrapping, no saturation:
/// the clamp bit is not set by compilers and is refused). Operand (row r, k)
/// sits in lane r + M * floor(k / P), byte k mod P, with P = M*K/64 bytes a
/// lane (8 for gfx942's 16x16x32 and 32x32x16, 16 for gfx950's 16x16x64 and
/// 32x32x32); the accumulators as the f32 forms'.
template <unsigned M, unsigned K> Error mfmaI8(Ctx &c, const Inst &I) {
  if (I.cbsz || I.abid || I.blgp)
    return c.fail(I, "MFMA broadcast controls (cbsz/abid/blgp) are not "
                     "modelled");
  if (I.clamp)
    return c.fail(I, "integer MFMA with clamp (saturation) is not modelled");
  constexpr unsigned kPerLane = M * K / 64;
  auto fetch = [&](const Operand &op, unsigned r, unsigned k) -> int32_t {
    unsigned lane = r + M * (k / kPerLane), byte = k % kPerLane;
    uint32_t word = c.readRaw32(op, lane, byte / 4);
    return int32_t(int8_t(uint8_t(word >> (8 * (byte % 4)))));
  };
  static thread_local std::vector<int32_t> A, B;
  A.resize(M * K);
  B.resize(M * K);
  for (unsigned r = 0; r < M; ++r)
    for (unsigned k = 0; k < K; ++k) {
      A[r * K + k] = fetch(I.src(0), r, k);
      B[r * K + k] = fetch(I.src(1), r, k);
    }
  const Operand &cop = I.src(2);
  uint32_t out[M * M];
  for (unsigned i = 0; i < M; ++i)
    for (unsigned j = 0; j < M; ++j) {
      auto [reg, lane] = accumulatorSlot<M>(i, j);
      uint32_t acc = cop.kind == OpKind::Imm ? immBits32(cop)
                                             : c.readRaw32(cop, lane, reg);
      for (unsigned k = 0; k < K; ++k)
        acc += uint32_t(A[i * K + k] * B[j * K + k]);
      out[reg * 64 + lane] = acc;
    }
  const Operand &d = I.ops[0];
  for (unsigned reg = 0; reg < M * M / 64; ++reg)
    for (unsigned lane = 0; lane < 64; ++lane)
      c.vreg(d, lane, reg) = out[reg * 64 + lane];
  return Error::success();
}

using EK = ElemKind;
const InstDef kMfmaRows[] = {
    {"v_mfma_i32_16x16x32_i8", Operands::Def, InstClass::MFMA, mfmaI8<16, 32>},
    {"v_mfma_i32_32x32x16_i8", Operands::Def, InstClass::MFMA, mfmaI8<32, 16>},
    {"v_mfma_i32_16x16x64_i8", Operands::Def, InstClass::MFMA, mfmaI8<16, 64>},
    {"v_mfma_i32_32x32x32_i8", Operands::Def, InstClass::MFMA, mfmaI8<32, 32>},
    {"v_mfma_f32_16x16x32_fp8_fp8", Operands::Def, InstClass::MFMA,
     mfma<16, 32, EK::FP8, EK::FP8, false>},
    {"v_mfma_f32_16x16x32_fp8_bf8", Operands::Def, InstClass::MFMA,
     mfma<16, 32, EK::FP8, EK::BF8, false>},
    {"v_mfma_f32_16x16x32_bf8_fp8", Operands::Def, InstClass::MFMA,
     mfma<16, 32, EK::BF8, EK::FP8, false>},
    {"v_mfma_f32_16x16x32_bf8_bf8", Operands::Def, InstClass::MFMA,
     mfma<16, 32, EK::BF8, EK::BF8, false>},
    {"v_mfma_f32_32x32x16_fp8_fp8", Operands::Def, InstClass::MFMA,
     mfma<32, 16, EK::FP8, EK::FP8, false>},
    {"v_mfma_f32_32x32x16_fp8_bf8", Operands::Def, InstClass::MFMA,
     mfma<32, 16, EK::FP8, EK::BF8, false>},
    {"v_mfma_f32_32x32x16_bf8_fp8", Operands::Def, InstClass::MFMA,
     mfma<32, 16, EK::BF8, EK::FP8, false>},
    {"v_mfma_f32_32x32x16_bf8_bf8", Operands::Def, InstClass::MFMA,
     mfma<32, 16, EK::BF8, EK::BF8, false>},
    {"v_mfma_f32_16x16x16_bf16", Operands::Def, InstClass::MFMA,
     mfma<16, 16, EK::BF16, EK::BF16, false>},
    {"v_mfma_f32_32x32x8_bf16", Operands::Def, InstClass::MFMA,
     mfma<32, 8, EK::BF16, EK::BF16, false>},
    {"v_mfma_f32_16x16x16_f16", Operands::Def, InstClass::MFMA,
     mfma<16, 16, EK::F16, EK::F16, false>},
    {"v_mfma_f32_32x32x8_f16", Operands::Def, InstClass::MFMA,
     mfma<32, 8, EK::F16, EK::F16, false>},
    {"v_mfma_f32_16x16x32_bf16", Operands::Def, InstClass::MFMA,
     mfma<16, 32, EK::BF16, EK::BF16, false>},
    {"v_mfma_f32_32x32x16_bf16", Operands::Def, InstClass::MFMA,
     mfma<32, 16, EK::BF16, EK::BF16, false>},
    {"v_mfma_f32_16x16x32_f16", Operands::Def, InstClass::MFMA,
     mfma<16, 32, EK::F16, EK::F16, false>},
    {"v_mfma_f32_32x32x16_f16", Operands::Def, InstClass::MFMA,
     mfma<32, 16, EK::F16, EK::F16, false>},
    {"v_mfma_f32_16x16x128_f8f6f4", Operands::Def, InstClass::MFMA,
     mfma<16, 128, EK::FP8, EK::FP8, true>},
    {"v_mfma_f32_32x32x64_f8f6f4", Operands::Def, InstClass::MFMA,
     mfma<32, 64, EK::FP8, EK::FP8, true>},
};

} // namespace

void registerMfmaOps(InstTable &t) { t.add(kMfmaRows); }

} // namespace mlir::mlafp8::emu
