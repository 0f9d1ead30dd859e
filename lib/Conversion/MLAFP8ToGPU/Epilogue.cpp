//===- Epilogue.cpp - Descale, bias, round and store Y --------------------===//

#include "Epilogue.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace mlir::mlafp8;

namespace {
class OutputEpilogue : public Epilogue, private EmitterBase {
public:
  explicit OutputEpilogue(const EmitterBase &kernel) : EmitterBase(kernel) {}

  void emit(ValueRange accs) override;
};
} // namespace

void OutputEpilogue::emit(ValueRange accs) {
  Type f32Type = b.getF32Type();
  Value descale = memref::LoadOp::create(
      b, ws, ValueRange{p.perBatchScale ? batch : cst(0)});
  Value laneGroup = div(lane, p.mfma->n);
  Value laneInGroup = rem(lane, p.mfma->n);
  for (int64_t mtw = 0; mtw < p.mtPerWave; ++mtw) {
    Value rowBase = add(m0, mul(add(mul(waveM, p.mtPerWave), mtw), p.mfma->m));
    for (int64_t nt = 0; nt < p.ntPerWave; ++nt) {
      Value acc = accs[mtw * p.ntPerWave + nt];
      Value column = outputColumn(laneInGroup, nt);
      Value columnOk;
      if (p.n % p.tile.getBlockN() != 0)
        columnOk = ult(column, cst(p.n));
      Value biasValue;
      if (p.hasBias) {
        Value biasColumn = columnOk ? minIdx(column, cst(p.n - 1)) : column;
        biasValue = memref::LoadOp::create(
            b, bias, ValueRange{add(mul(batch, p.n), biasColumn)});
        biasValue = arith::ExtFOp::create(b, f32Type, biasValue);
      }
      for (int64_t r = 0; r < p.accumulators; ++r) {
        Value row = add(rowBase, accumulatorRow(laneGroup, r));
        Value value = vector::ExtractOp::create(b, acc, r);
        value = arith::MulFOp::create(b, value, descale);
        if (biasValue)
          value = arith::AddFOp::create(b, value, biasValue);
        value = arith::TruncFOp::create(b, p.yType, value);
        Value inBounds = ult(row, m);
        if (columnOk)
          inBounds = arith::AndIOp::create(b, inBounds, columnOk);
        emitIf(inBounds, [&] {
          Value offset =
              add(add(mul(batch, yStrideB), mul(row, yStrideM)), column);
          memref::StoreOp::create(b, value, y, ValueRange{offset});
        });
      }
    }
  }
}

std::unique_ptr<Epilogue>
mlir::mlafp8::createOutputEpilogue(const EmitterBase &kernel) {
  return std::make_unique<OutputEpilogue>(kernel);
}
