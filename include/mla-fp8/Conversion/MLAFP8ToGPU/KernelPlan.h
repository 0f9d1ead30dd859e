//===- KernelPlan.h - The geometry of one prequant_bmm kernel ---*- C++ -*-===//
//
// What convert-mlafp8-to-gpu decides before it emits a kernel: the MFMA (its
// record in Hardware/Mfma.h), how the tile is split among waves, how a K-group
// is loaded and quantized, and the K-group ranges of split-K. The emitter
// reads these numbers; it derives no geometry of its own. The launch contract
// (arguments, grid, workspace, LDS) is ABI/KernelABI.h.
//
//===----------------------------------------------------------------------===//

#ifndef MLAFP8_CONVERSION_MLAFP8TOGPU_KERNELPLAN_H
#define MLAFP8_CONVERSION_MLAFP8TOGPU_KERNELPLAN_H

#include "mla-fp8/ABI/KernelABI.h"
#include "mla-fp8/Dialect/MLAFP8/IR/MLAFP8Ops.h"
#include "mla-fp8/Hardware/Chip.h"

#include "llvm/Support/Error.h"

namespace mlir::mlafp8 {

/// X columns one lane converts at once: a 16-byte bf16/f16 load, 8 fp8 bytes.
inline constexpr int64_t kChunkColumns = 8;

/// The compile-time facts of one kernel, and the geometry derived from them.
struct KernelPlan {
  int64_t n, k, groupSize;
  Type xType, wType, yType;
  bool perBatchScale, hasBias;
  /// The largest finite value of the fp8 format.
  float fmax;
  TileAttr tile;
  /// The launch facts of the ABI (grid, workgroup, workspace).
  kernel_abi::LaunchShape launch;

  /// The MFMA: an m x n output, k deep, per wave of `waveSize` lanes.
  const MfmaLayout *mfma;
  int64_t waveSize;
  /// From the record: lane groups along K (operands) and along rows
  /// (accumulators), operand bytes per lane of one MFMA, f32 accumulators per
  /// lane of one MFMA tile.
  int64_t laneGroups, operandBytes, accumulators;
  /// The MFMAs compute the tile transposed, Y^T = W X^T (W as the A operand,
  /// the quantized X as B), when a lane's accumulators are then one run of
  /// adjacent columns of a single row (the 16x16 shapes): one row scale per
  /// lane, and the epilogue stores them as they are, with no transpose. The
  /// 32x32 shapes keep X as A: transposed, a lane's 16 accumulators would be
  /// four runs of one row, stored as four times the cache lines.
  bool transposedTile;

  /// A "unit" is what one lane loads at once for one operand: two MFMA steps
  /// (2 * operandBytes), or one when the group is too short for two.
  int64_t unitBytes, unitsPerGroup, stepsPerUnit;
  /// Waves split N first (each wave its own W columns), then M; each wave
  /// computes mtPerWave x ntPerWave MFMA tiles, waveCols columns wide.
  int64_t wavesN, wavesM, waveCols, mtPerWave, ntPerWave;
  /// Quantization: lanesPerRow lanes share a row, chunksPerLane chunks of
  /// kChunkColumns each; rowsPerPass rows per pass over the workgroup.
  int64_t threads, chunksPerRow, lanesPerRow, chunksPerLane, rowsPerPass,
      passes;
  int64_t fullGroups, tailColumns, numGroups;
  /// The most K-groups one workgroup runs: ceil(numGroups / split_k).
  int64_t maxGroupsPerWorkgroup;
  /// Split-K: N tiles, f32 elements of one (batch, M tile) workspace block,
  /// and the element of a block's first arrival counter (the ABI's).
  int64_t nTiles, workspaceBlockElements, workspaceCountersElement;
  /// Alignment in bytes of the X and W global loads.
  int64_t xAlign, wAlign;
  /// The full K-groups per workgroup when that count is static and small
  /// enough to be emitted as straight-line code (kMaxUnrolledGroups), else 0.
  int64_t unrolledGroups;
  /// LDS copies of the quantized A tile and its row scales: one per unrolled
  /// group when they fit kMaxBatchedLDSBytes (every group is quantized before
  /// one barrier, then all are multiplied), else 1 (a barrier pair per group).
  int64_t ldsBuffers;
  /// Bytes of one LDS copy of the quantized A tile (one K-group).
  int64_t ldsABytes;
};

/// The most full K-groups per workgroup emitted as straight-line code rather
/// than a loop: DeepSeek's V-up (K = 512) has 4, K = 1024 has 8.
inline constexpr int64_t kMaxUnrolledGroups = 8;

/// The most VGPRs per lane that the loads (and, batched, the X operands) of
/// all straight-line groups may take: DeepSeek's V-up tiles take 96 and 128;
/// the accumulators and addresses need the rest of the budget LLVM keeps
/// without spilling.
inline constexpr int64_t kMaxUnrolledLoadRegisters = 128;

/// The most LDS that the per-group copies of an unrolled kernel may take:
/// half of gfx942's 64 KiB, so that LDS never limits residency below two
/// workgroups per CU.
inline constexpr int64_t kMaxBatchedLDSBytes = 32 * 1024;

/// Plans the kernel of `tile` for `op` on `chip`, or says why it cannot be
/// built (an MFMA the chip lacks, a group shorter than the MFMA's K, waves
/// that cannot share the tile, split_k above the K-groups, too much LDS).
llvm::Expected<KernelPlan> planKernel(PrequantBmmOp op, const ChipInfo &chip,
                                      TileAttr tile);

} // namespace mlir::mlafp8

#endif // MLAFP8_CONVERSION_MLAFP8TOGPU_KERNELPLAN_H
