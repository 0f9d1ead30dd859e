//===- EmitterBase.cpp - What every part of a kernel emitter shares -------===//

#include "EmitterBase.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::mlafp8;

void EmitterBase::emitIf(Value cond, function_ref<void()> body) {
  auto ifOp = scf::IfOp::create(b, cond, /*withElseRegion=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
  body();
}

Value EmitterBase::loadVector(Value memref, Value offset, int64_t count,
                              Type elementType, int64_t align, Value valid) {
  auto type = VectorType::get({count}, elementType);
  if (!valid) {
    auto load = vector::LoadOp::create(b, type, memref, ValueRange{offset});
    load.setAlignment(uint64_t(align));
    return load;
  }
  // lane i of the mask is `i < valid`; built from a constant step vector
  // (vector.create_mask has no lowering in convert-gpu-to-rocdl).
  auto i32s = VectorType::get({count}, b.getI32Type());
  SmallVector<int32_t> steps;
  for (int64_t i = 0; i < count; ++i)
    steps.push_back(static_cast<int32_t>(i));
  Value step = arith::ConstantOp::create(
      b, i32s, DenseElementsAttr::get(i32s, ArrayRef<int32_t>(steps)));
  Value bound = vector::BroadcastOp::create(
      b, i32s, arith::IndexCastOp::create(b, b.getI32Type(), valid));
  Value mask = arith::CmpIOp::create(b, arith::CmpIPredicate::slt, step, bound);
  Value zero = arith::ConstantOp::create(
      b, type, DenseElementsAttr::get(type, b.getZeroAttr(elementType)));
  return vector::MaskedLoadOp::create(b, type, memref, ValueRange{offset}, mask,
                                      zero);
}

Value EmitterBase::loadTailVector(Value memref, Value base, Value column,
                                  int64_t count, Type elementType,
                                  int64_t align) {
  if (p.tailColumns % count != 0)
    return loadVector(memref, add(base, column), count, elementType, align,
                      tailValid(column, count));
  Value inside = ult(column, cst(p.tailColumns));
  Value safe = arith::SelectOp::create(b, inside, column, cst(0));
  Value loaded =
      loadVector(memref, add(base, safe), count, elementType, align, Value());
  auto type = VectorType::get({count}, elementType);
  Value zero = arith::ConstantOp::create(
      b, type, DenseElementsAttr::get(type, b.getZeroAttr(elementType)));
  return arith::SelectOp::create(b, inside, loaded, zero);
}

Value EmitterBase::slice(Value v, int64_t start, int64_t size) {
  SmallVector<int64_t> positions;
  for (int64_t i = 0; i < size; ++i)
    positions.push_back(start + i);
  return vector::ShuffleOp::create(b, v, v, positions);
}

Value EmitterBase::concat(Value x, Value y) {
  int64_t size = cast<VectorType>(x.getType()).getNumElements() +
                 cast<VectorType>(y.getType()).getNumElements();
  SmallVector<int64_t> positions;
  for (int64_t i = 0; i < size; ++i)
    positions.push_back(i);
  return vector::ShuffleOp::create(b, x, y, positions);
}

Value EmitterBase::tailValid(Value column, int64_t width) {
  Value left = arith::SubIOp::create(b, cst(p.tailColumns), column);
  left = arith::MaxSIOp::create(b, left, cst(0));
  return arith::MinSIOp::create(b, left, cst(width));
}

/// Bytes of one row of LDS banks (32 banks of 4 bytes): what one phase of a
/// ds_write_b64 (16 lanes) or of an A-operand read covers at most.
static constexpr int64_t kBankRowBytes = 128;

Value EmitterBase::ldsAOffset(Value mt, Value unit, Value operandLane) {
  // Unswizzled, a store phase (16 lanes) holds consecutive chunks of one row
  // (or of 128 / G adjacent rows): different units and lane groups at the
  // same offset modulo kBankRowBytes, up to 8 chunks in the same banks.
  // XORing the slot with key = (K slot * rows per phase) mod (slots per bank
  // row) gives each (row, K slot) of a phase its own banks. The key is the
  // same across a lane group and permutes slots within aligned runs of
  // `slotsPerBankRow`, so the A-operand reads stay conflict-free (checked for
  // every MFMA shape and group size against the read phases of gfx942 and
  // gfx950).
  int64_t slotsPerBankRow = kBankRowBytes / p.unitBytes;
  int64_t storeLanes = kBankRowBytes / kChunkColumns;
  int64_t rowsPerPhase = std::max<int64_t>(1, storeLanes / p.lanesPerRow);
  // K slot = unit * laneGroups + lane group, and the lane group is below
  // laneGroups (all powers of two): the key is the XOR of a lane part and a
  // unit part. A reader then computes its swizzled lane once; each further
  // unit costs one XOR with a constant and an immediate offset.
  Value laneGroup = div(operandLane, p.mfma->m);
  Value laneKey = rem(mul(laneGroup, rowsPerPhase), slotsPerBankRow);
  Value unitKey = rem(mul(unit, p.laneGroups * rowsPerPhase), slotsPerBankRow);
  Value laneBytes =
      mul(arith::XOrIOp::create(b, operandLane, laneKey), p.unitBytes);
  Value slotBytes =
      arith::XOrIOp::create(b, laneBytes, mul(unitKey, p.unitBytes));
  Value unitIndex = add(mul(mt, p.unitsPerGroup), unit);
  Value offset = add(mul(unitIndex, p.waveSize * p.unitBytes), slotBytes);
  return ldsBuffer == 0 ? offset : add(offset, ldsBuffer * p.ldsABytes);
}
