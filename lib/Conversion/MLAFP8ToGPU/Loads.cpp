//===- Loads.cpp - The global loads of one K-group ------------------------===//

#include "KernelEmitter.h"

#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::mlafp8;

SmallVector<Value> KernelEmitter::loadGroup(Value k0, bool partial) {
  Type i8Type = b.getI8Type();
  Value laneGroup = div(lane, p.mfma->n);
  Value laneInGroup = rem(lane, p.mfma->n);
  SmallVector<Value> loads;
  // W: one unit per lane per (N tile, unit) holds the B operands of
  // `stepsPerUnit` MFMAs.
  for (int64_t nt = 0; nt < p.ntPerWave; ++nt) {
    Value column = outputColumn(laneInGroup, nt);
    if (p.n % p.tile.getBlockN() != 0)
      column = minIdx(column, cst(p.n - 1));
    Value rowStart = mul(add(mul(batch, p.n), column), p.k);
    for (int64_t u = 0; u < p.unitsPerGroup; ++u) {
      Value kInGroup = operandK(laneGroup, u);
      Value valid = partial ? tailValid(kInGroup, p.unitBytes) : Value();
      loads.push_back(loadVector(w, add(add(rowStart, k0), kInGroup),
                                 p.unitBytes, i8Type, p.wAlign, valid));
    }
  }
  // X: `lanesPerRow` adjacent lanes share a row, one chunk of columns each.
  // Rows past M read row M - 1 (always valid: a workgroup exists only for
  // m0 < M); their results are never stored.
  Value laneInRow = rem(tid, p.lanesPerRow);
  Value rowInPass = div(tid, p.lanesPerRow);
  Value lastRow = arith::SubIOp::create(b, m, cst(1));
  for (int64_t pass = 0; pass < p.passes; ++pass) {
    Value row = add(rowInPass, pass * p.rowsPerPass);
    Value globalRow = minIdx(add(m0, row), lastRow);
    Value rowOffset =
        add(add(mul(batch, xStrideB), mul(globalRow, xStrideM)), k0);
    auto loadChunks = [&] {
      SmallVector<Value> chunks;
      for (int64_t c = 0; c < p.chunksPerLane; ++c) {
        Value column = mul(add(laneInRow, c * p.lanesPerRow), kChunkColumns);
        // Columns past K read as zero.
        Value valid = partial ? tailValid(column, kChunkColumns) : Value();
        chunks.push_back(loadVector(x, add(rowOffset, column), kChunkColumns,
                                    p.xType, p.xAlign, valid));
      }
      return chunks;
    };
    if (pass == 0) {
      loads.append(loadChunks());
      continue;
    }
    // Passes past M load nothing (see passActive).
    auto chunkType = VectorType::get({kChunkColumns}, p.xType);
    SmallVector<Type> types(p.chunksPerLane, chunkType);
    auto ifOp = scf::IfOp::create(b, types, passActive(pass),
                                  /*withElseRegion=*/true);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToEnd(ifOp.thenBlock());
      scf::YieldOp::create(b, loadChunks());
      b.setInsertionPointToEnd(ifOp.elseBlock());
      Value zero = arith::ConstantOp::create(
          b, chunkType,
          DenseElementsAttr::get(chunkType, b.getZeroAttr(p.xType)));
      scf::YieldOp::create(b, SmallVector<Value>(p.chunksPerLane, zero));
    }
    loads.append(ifOp.getResults().begin(), ifOp.getResults().end());
  }
  return loads;
}
