//===- Mma.cpp - The MFMAs of one K-group ---------------------------------===//

#include "KernelEmitter.h"

#include "mlir/Dialect/AMDGPU/IR/AMDGPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace mlir::mlafp8;

SmallVector<Value> KernelEmitter::emitGroup(ValueRange loads, ValueRange accs,
                                            bool more) {
  setSaturatingFp8(true);
  quantizeRows(getXLoads(loads));
  // Cleared again before anything else converts: the epilogue's f16
  // rounding keeps its overflow to Inf.
  setSaturatingFp8(false);
  gpu::BarrierOp::create(b);
  SmallVector<Value> results = multiplyGroup(loads, accs);
  // The next group's quantization rewrites the LDS copy.
  if (more && p.maxGroupsPerWorkgroup > 1)
    gpu::BarrierOp::create(b);
  return results;
}

SmallVector<Value> KernelEmitter::multiplyGroup(ValueRange loads,
                                                ValueRange accs) {
  Type i8Type = b.getI8Type();
  auto unitI8 = VectorType::get({p.unitBytes}, i8Type);
  auto unitFp8 = VectorType::get({p.unitBytes}, p.wType);
  SmallVector<SmallVector<Value>> wUnits(p.ntPerWave);
  for (int64_t nt = 0; nt < p.ntPerWave; ++nt)
    for (int64_t u = 0; u < p.unitsPerGroup; ++u)
      wUnits[nt].push_back(vector::BitCastOp::create(
          b, unitFp8, getWLoads(loads)[nt * p.unitsPerGroup + u]));

  Value zero = arith::ConstantOp::create(
      b, accType, DenseElementsAttr::get(accType, b.getF32FloatAttr(0.0f)));
  // Not transposed, the row scales are read a run of accumulator rows at a
  // time.
  int64_t runRows = p.mfma->accRowsPerRun;
  auto scaleRun = VectorType::get({runRows}, b.getF32Type());
  SmallVector<Value> results;
  for (int64_t mtw = 0; mtw < p.mtPerWave; ++mtw) {
    Value mt = add(mul(waveM, p.mtPerWave), mtw);
    SmallVector<Value> aUnits;
    for (int64_t u = 0; u < p.unitsPerGroup; ++u) {
      Value offset = ldsAOffset(mt, u, lane);
      auto load = vector::LoadOp::create(b, unitI8, ldsA, ValueRange{offset});
      load.setAlignment(uint64_t(p.unitBytes));
      aUnits.push_back(vector::BitCastOp::create(b, unitFp8, load));
    }
    // The row scales of this lane's accumulator elements (SPEC.md s[b,m,g]),
    // in register order: one row per lane in a transposed tile, else a run
    // of accumulator rows at a time.
    Value scales;
    if (p.transposedTile) {
      Value row = add(mul(mt, p.mfma->m), rem(lane, p.mfma->m));
      Value scale =
          memref::LoadOp::create(b, ldsScales, ValueRange{scaleRow(row)});
      scales = vector::BroadcastOp::create(b, accType, scale);
    }
    Value laneRows = mul(div(lane, p.mfma->n), runRows);
    for (int64_t run = 0; !p.transposedTile && run < p.accumulators / runRows;
         ++run) {
      Value offset = scaleRow(add(add(mul(mt, p.mfma->m), laneRows),
                                  accumulatorRowOfLane0(run * runRows)));
      auto load =
          vector::LoadOp::create(b, scaleRun, ldsScales, ValueRange{offset});
      load.setAlignment(uint64_t(4 * runRows));
      scales = scales ? concat(scales, load) : Value(load);
    }
    for (int64_t nt = 0; nt < p.ntPerWave; ++nt) {
      Value partialSum = zero;
      for (int64_t u = 0; u < p.unitsPerGroup; ++u)
        for (int64_t s = 0; s < p.stepsPerUnit; ++s) {
          int64_t step = p.operandBytes;
          Value a = p.stepsPerUnit == 1 ? aUnits[u]
                                        : slice(aUnits[u], step * s, step);
          Value bOp = p.stepsPerUnit == 1
                          ? wUnits[nt][u]
                          : slice(wUnits[nt][u], step * s, step);
          // Transposed: W's columns are the MFMA's rows, X's rows its
          // columns.
          if (p.transposedTile)
            std::swap(a, bOp);
          partialSum =
              amdgpu::MFMAOp::create(b, accType, p.mfma->m, p.mfma->n,
                                     p.mfma->k, 1u, a, bOp, partialSum);
        }
      Value acc = accs[mtw * p.ntPerWave + nt];
      Value scaled = arith::MulFOp::create(b, partialSum, scales);
      results.push_back(arith::AddFOp::create(b, acc, scaled));
    }
  }
  return results;
}
