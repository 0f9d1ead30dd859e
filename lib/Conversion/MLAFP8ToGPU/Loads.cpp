//===- Loads.cpp - The global loads of one K-group ------------------------===//
//
// Every load of a group is unconditional and issued in one batch, before any
// of its values is used: the group then costs one memory round trip, and with
// stages > 1 the wait for a prefetched group is a constant count of younger
// loads. (Loads under a branch, used in it, cost a round trip each, and
// leave LLVM unable to count the loads in flight after the branch joins.)
//
//===----------------------------------------------------------------------===//

#include "KernelEmitter.h"

#include "mlir/Dialect/AMDGPU/IR/AMDGPUDialect.h"

using namespace mlir;
using namespace mlir::mlafp8;

SmallVector<Value> KernelEmitter::loadGroup(Value k0, bool partial) {
  Type i8Type = b.getI8Type();
  SmallVector<Value> loads;
  // X: `lanesPerRow` adjacent lanes share a row, one chunk of columns each.
  // Every pass is loaded, also a pass wholly past M, which quantizeRows then
  // skips: rows past M read row M - 1 (always valid: a workgroup exists only
  // for m0 < M), and their results are never stored.
  // A pass's rows are the previous pass's plus rowsPerPass, so its offset is
  // one add of a uniform stride, not a 64-bit multiply per pass (a quarter-rate
  // VALU sequence), selected against the offset of row M - 1.
  Value laneInRow = rem(tid, p.lanesPerRow);
  Value firstRow = add(m0, div(tid, p.lanesPerRow));
  Value base = add(mul(batch, xStrideB), k0);
  Value firstOffset = add(base, mul(firstRow, xStrideM));
  Value lastOffset =
      add(base, mul(arith::SubIOp::create(b, m, cst(1)), xStrideM));
  Value passStride = mul(xStrideM, p.rowsPerPass);
  for (int64_t pass = 0; pass < p.passes; ++pass) {
    Value rowOffset = add(firstOffset, mul(passStride, pass));
    rowOffset = arith::SelectOp::create(
        b, ult(add(firstRow, pass * p.rowsPerPass), m), rowOffset, lastOffset);
    for (int64_t c = 0; c < p.chunksPerLane; ++c) {
      Value column = mul(add(laneInRow, c * p.lanesPerRow), kChunkColumns);
      // Columns past K read as zero.
      loads.push_back(
          partial ? loadTailVector(x, rowOffset, column, kChunkColumns,
                                   p.xType, p.xAlign)
                  : loadVector(x, add(rowOffset, column), kChunkColumns,
                               p.xType, p.xAlign));
    }
  }
  // X first: its round trip is the critical one (the quantization and its
  // LDS stores come before any MFMA, which then waits for W only). The fence
  // keeps the scheduler from issuing W's loads ahead of X's.
  emitScheduleFence();
  Value laneGroup = div(lane, p.mfma->n);
  Value laneInGroup = rem(lane, p.mfma->n);
  // W: one unit per lane per (N tile, unit) holds W's operands of
  // `stepsPerUnit` MFMAs.
  for (int64_t nt = 0; nt < p.ntPerWave; ++nt) {
    Value column = outputColumn(laneInGroup, nt);
    if (p.n % p.tile.getBlockN() != 0)
      column = minIdx(column, cst(p.n - 1));
    Value rowStart = mul(add(mul(batch, p.n), column), p.k);
    for (int64_t u = 0; u < p.unitsPerGroup; ++u) {
      Value kInGroup = operandK(laneGroup, u);
      Value groupStart = add(rowStart, k0);
      loads.push_back(
          partial ? loadTailVector(w, groupStart, kInGroup, p.unitBytes,
                                   i8Type, p.wAlign)
                  : loadVector(w, add(groupStart, kInGroup), p.unitBytes,
                               i8Type, p.wAlign));
    }
  }
  // Keeps the machine scheduler from moving a use of the first loads (such as
  // the bf16 -> f32 widening of pass 0) above the later loads: its wait would
  // then split the batch into two round trips.
  emitScheduleFence();
  // In straight-line code (not inside the K loop), the first group's loads
  // are followed by the epilogue's uniform Y offset (EmitterBase::yTileBase).
  if (!yTileBase && isa<gpu::GPUFuncOp>(b.getInsertionBlock()->getParentOp()))
    yTileBase = getYTileBase();
  return loads;
}

void KernelEmitter::emitScheduleFence() {
  amdgpu::SchedBarrierOp::create(
      b, amdgpu::sched_barrier_opt_enumAttr::get(
             b.getContext(), amdgpu::sched_barrier_opt_enum::none));
}
