//===- Mfma.h - The fp8 MFMA instructions and their layouts, as data -*- C++
//-*-===//
//
// One record per fp8 matrix-core instruction: its shape, and where each lane
// holds each element of its operands and accumulators. The tile verifier,
// tile selection, the kernel plan and the emitter read these records instead
// of decoding shapes themselves; the emulator's MFMA semantics are written
// independently and a unit test checks that the two agree.
//
// MLIR-free (LLVM Support only), so that the emulator and run-time tools can
// use it.
//
//===----------------------------------------------------------------------===//

#ifndef MLA_FP8_HARDWARE_MFMA_H
#define MLA_FP8_HARDWARE_MFMA_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>

namespace mlir::mlafp8 {

/// Lanes of the waves every MFMA here runs on.
inline constexpr unsigned kMfmaWaveSize = 64;

/// AMD Instinct architecture generations, as a set of bits.
enum class Arch : uint8_t {
  /// MI300X/MI300A/MI325X (gfx942).
  CDNA3 = 1,
  /// MI350X/MI355X (gfx950).
  CDNA4 = 2,
};

/// A position in an operand: the row of A (or the column of B) and the index
/// along K.
struct OperandElement {
  unsigned row;
  unsigned k;
};

/// A position in the accumulator (C/D) tile.
struct AccumulatorElement {
  unsigned row;
  unsigned col;
};

/// Where an operand element lives: its lane and the byte within the lane's
/// operand registers.
struct OperandSlot {
  unsigned lane;
  unsigned byte;
};

/// One fp8 MFMA: D(m x n) += A(m x k) * B(k x n) on one wave.
///
/// Operands (A, and B with columns for rows): a lane holds `runs` runs of
/// `kPerRun` consecutive k, for row `lane % m`. Lane group g = lane / m holds
/// k in [g * kPerRun, (g + 1) * kPerRun) of each run, and run r starts at
/// k = r * kPerRun * (64 / m):
///   k(lane, byte) = (byte / kPerRun) * kPerRun * laneGroups
///                   + (lane / m) * kPerRun + byte % kPerRun.
/// Accumulators: element e of a lane is column `lane % n` and, in runs of
/// `accRowsPerRun` consecutive rows,
///   row(lane, e) = (e / accRowsPerRun) * accRowsPerRun * laneGroups
///                  + (lane / n) * accRowsPerRun + e % accRowsPerRun.
struct MfmaLayout {
  /// How #mlafp8.tile spells the shape, e.g. "m16n16k32".
  llvm::StringRef shapeName;
  /// The assembler mnemonic, e.g. "v_mfma_f32_16x16x32_fp8_fp8".
  llvm::StringRef mnemonic;
  unsigned m, n, k;
  /// Consecutive k of one operand run in a lane (bytes, fp8 operands).
  unsigned kPerRun;
  /// Runs of operand bytes per lane.
  unsigned runs;
  /// Consecutive accumulator rows per run.
  unsigned accRowsPerRun;
  /// Issue cycles of one instruction with fp8 operands (ISA-NOTES.md §4).
  unsigned cycles;
  /// gfx950's f8f6f4 encoding: the operand formats are instruction fields.
  bool f8f6f4;
  /// The v_mfma_scale_* form: A and B take an E8M0 scale per 32 k.
  bool blockScaled;
  /// The architectures that implement it (bits of Arch).
  uint8_t archs;

  /// Lane groups along K (operands) or along rows (accumulators).
  unsigned getLaneGroups() const { return kMfmaWaveSize / m; }
  /// Operand bytes each lane supplies for A (and for B).
  unsigned getOperandBytesPerLane() const { return kPerRun * runs; }
  /// f32 accumulators each lane holds.
  unsigned getAccumulatorsPerLane() const { return m * n / kMfmaWaveSize; }
  /// Whether `arch` implements the instruction.
  bool isOn(Arch arch) const { return archs & static_cast<uint8_t>(arch); }

  /// The element that byte `byte` of lane `lane`'s operand holds.
  OperandElement getOperandElement(unsigned lane, unsigned byte) const;
  /// Where element (row, k) of an operand lives.
  OperandSlot locateOperand(unsigned row, unsigned k) const;
  /// The element that accumulator `element` of lane `lane` holds.
  AccumulatorElement getAccumulatorElement(unsigned lane,
                                           unsigned element) const;
};

/// Every fp8 MFMA record, in a stable order.
llvm::ArrayRef<MfmaLayout> getMfmaLayouts();

/// The unscaled record whose shape name is `shapeName`, or null.
const MfmaLayout *lookupMfma(llvm::StringRef shapeName);

/// The record of shape m x n x k (block-scaled or not), or null.
const MfmaLayout *lookupMfma(unsigned m, unsigned n, unsigned k,
                             bool blockScaled = false);

} // namespace mlir::mlafp8

#endif // MLA_FP8_HARDWARE_MFMA_H
