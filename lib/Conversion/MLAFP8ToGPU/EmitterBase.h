//===- EmitterBase.h - What every part of a kernel emitter shares -*- C++ -*-=//
//
// The builder, the plan, the kernel's bound arguments and ids, index
// arithmetic, and the named layout helpers: every offset, column, row and
// mask that more than one part of the kernel needs is computed here, once.
// The parts (loads, quantization, MMA, epilogues) derive from EmitterBase.
//
//===----------------------------------------------------------------------===//

#ifndef MLAFP8_LIB_CONVERSION_MLAFP8TOGPU_EMITTERBASE_H
#define MLAFP8_LIB_CONVERSION_MLAFP8TOGPU_EMITTERBASE_H

#include "mla-fp8/Conversion/MLAFP8ToGPU/KernelPlan.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

namespace mlir::mlafp8 {

/// Index arithmetic is on `index`; values that are compile-time constants
/// fold away. Copyable: an epilogue takes a copy once the kernel's values are
/// bound.
class EmitterBase {
public:
  EmitterBase(ImplicitLocOpBuilder &b, const KernelPlan &p) : b(b), p(p) {}

protected:
  Value cst(int64_t v) { return arith::ConstantIndexOp::create(b, v); }
  Value f32(float v) {
    return arith::ConstantOp::create(b, b.getF32FloatAttr(v));
  }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, x, y); }
  Value add(Value x, int64_t y) { return y == 0 ? x : add(x, cst(y)); }
  Value mul(Value x, Value y) { return arith::MulIOp::create(b, x, y); }
  Value mul(Value x, int64_t y) { return y == 1 ? x : mul(x, cst(y)); }
  Value div(Value x, int64_t y) { return arith::DivUIOp::create(b, x, cst(y)); }
  Value rem(Value x, int64_t y) { return arith::RemUIOp::create(b, x, cst(y)); }
  Value minIdx(Value x, Value y) { return arith::MinUIOp::create(b, x, y); }
  Value ult(Value x, Value y) {
    return arith::CmpIOp::create(b, arith::CmpIPredicate::ult, x, y);
  }
  /// Emits `body` under `scf.if cond`.
  void emitIf(Value cond, function_ref<void()> body);

  /// Loads `count` elements at `memref[offset]`; with `valid` (the number of
  /// leading elements that exist, clamped to [0, count]), a masked load that
  /// reads zeros for the rest.
  Value loadVector(Value memref, Value offset, int64_t count, Type elementType,
                   int64_t align, Value valid = {});
  /// Loads `count` elements at `memref[base + column]`, `column` a K-group
  /// column of the partial last group and a multiple of `count`; those past
  /// the group's tail read as zero. Where the tail is a multiple of `count`
  /// (every K of the presets: 192 and 64 leave 64), a chunk lies wholly
  /// before or wholly past the tail: it is one unconditional load (a chunk
  /// past the tail reads the group's first chunk, always in bounds) and a
  /// select, with no branch. A masked load instead becomes one branch and
  /// one memory round trip per element in the AMDGPU backend.
  Value loadTailVector(Value memref, Value base, Value column, int64_t count,
                       Type elementType, int64_t align);
  /// Picks `[start, start + size)` of a vector, or concatenates two.
  Value slice(Value v, int64_t start, int64_t size);
  Value concat(Value x, Value y);

  /// Whether pass `pass` of the quantization holds any row below M: a
  /// workgroup-uniform condition. Passes past M are not quantized (their
  /// clamped loads are still issued, see loadGroup); the LDS rows they would
  /// write only feed accumulator rows that are never stored (an MFMA output
  /// row depends on its own X row only).
  Value passActive(int64_t pass) {
    return ult(add(m0, pass * p.rowsPerPass), m);
  }

  // Named layout helpers.

  /// How many of `width` elements starting at K-group column `column` of the
  /// partial last group exist: max(0, min(width, tail - column)).
  Value tailValid(Value column, int64_t width);
  /// The output column (of Y, bias and W) that lane `laneInGroup` of this
  /// wave's MFMA tile `nt` supplies W for, and whose accumulators it holds
  /// in a tile that is not transposed (KernelPlan::transposedTile).
  Value outputColumn(Value laneInGroup, int64_t nt) {
    return add(add(n0, mul(waveN, p.waveCols)),
               add(laneInGroup, nt * p.mfma->n));
  }
  /// The K offset within a group of the operand unit `unit` of lane group
  /// `laneGroup`: units of lane groups are interleaved along K. X and W use
  /// the same permutation of K, so each lane's MFMA operands are contiguous.
  Value operandK(Value laneGroup, int64_t unit) {
    return add(mul(laneGroup, p.unitBytes), unit * p.unitBytes * p.laneGroups);
  }
  /// The byte offset in the LDS tile of quantized X (the "A tile", whichever
  /// MFMA operand it feeds) of operand unit `unit` of MFMA row
  /// tile `mt` for MFMA lane `operandLane`: [mt][unit][slot][unitBytes], so
  /// that each lane reads its unit with one aligned load. The slot is
  /// `operandLane` XOR a key of the lane's K position, which spreads the
  /// quantization's stores over the LDS banks (see the definition).
  Value ldsAOffset(Value mt, Value unit, Value operandLane);
  Value ldsAOffset(Value mt, int64_t unit, Value operandLane) {
    return ldsAOffset(mt, cst(unit), operandLane);
  }
  /// The element of `row`'s scale in ldsScales (copy ldsBuffer).
  Value scaleRow(Value row) {
    return ldsBuffer == 0 ? row : add(row, ldsBuffer * p.tile.getBlockM());
  }
  /// The row, within an MFMA tile, of accumulator `element` of the lanes of
  /// accumulator lane group `laneGroup` (lane / n): the record's row of lane
  /// 0 plus the lane group's rows.
  Value accumulatorRow(Value laneGroup, int64_t element) {
    return add(mul(laneGroup, p.mfma->accRowsPerRun),
               accumulatorRowOfLane0(element));
  }
  /// Y's element offset of the tile's first row: yTileBase where it was
  /// computed early, else computed here.
  Value getYTileBase() {
    return yTileBase ? yTileBase : add(mul(batch, yStrideB), mul(m0, yStrideM));
  }
  int64_t accumulatorRowOfLane0(int64_t element) const {
    return p.mfma->getAccumulatorElement(0, element).row;
  }

  ImplicitLocOpBuilder &b;
  const KernelPlan &p;
  // Kernel arguments and workgroup memory.
  Value x, w, ws, bias, y, m, xStrideB, xStrideM, yStrideB, yStrideM;
  Value workspace;
  /// Y's element offset of the tile's first row, batch * y_stride_b + m0 *
  /// y_stride_m, computed right after the first group's loads (null until
  /// then; the epilogue computes it itself where it is null). In a kernel
  /// of one basic block up to the barrier (single-pass tiles), the scalar
  /// loads of the strides, which are not preloaded, are then issued early
  /// and return while the wave waits for X. Where a branch (a pass past M)
  /// splits the block, LLVM still sinks them to their use, and their wait
  /// joins the quantization's LDS wait, which also counts scalar loads.
  Value yTileBase;
  Value ldsA, ldsScales;
  /// The LDS copy (of p.ldsBuffers) that quantization writes and the MFMAs
  /// read: ldsAOffset and scaleRow offset into it.
  int64_t ldsBuffer = 0;
  // Ids; `split` is the split-K index (null without split-K).
  Value tid, lane, wave, waveN, waveM, batch, mTile, nTile, split, m0, n0;
  /// One MFMA tile's accumulators of a lane.
  VectorType accType;
};

} // namespace mlir::mlafp8

#endif // MLAFP8_LIB_CONVERSION_MLAFP8TOGPU_EMITTERBASE_H
