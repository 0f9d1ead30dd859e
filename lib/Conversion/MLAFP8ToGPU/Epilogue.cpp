//===- Epilogue.cpp - Descale, bias, round and store Y --------------------===//
//
// Each lane stores runs of 4 adjacent columns of one row, one 8-byte buffer
// store per run and N tile. A transposed tile (the 16x16 MFMAs, see
// KernelPlan::transposedTile) holds them so already. Otherwise a run of MFMA
// accumulators gives a lane 4 consecutive rows of one column, and the 4 lanes
// of a DPP quad hold 4 adjacent columns: the run is rounded and packed in two
// dwords, then transposed inside each quad (DPP, no LDS). Rows past M and
// columns past N are masked by sending the store past Y's extent, where the
// buffer's range check drops it: no branch, where each element had its own
// 2-byte store, 64-bit address and branch.
//
//===----------------------------------------------------------------------===//

#include "Epilogue.h"

#include "mlir/Dialect/AMDGPU/IR/AMDGPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace mlir::mlafp8;

/// Lanes of a DPP quad, and so the rows of a run a transpose exchanges.
static constexpr int64_t kQuadLanes = 4;

namespace {
class OutputEpilogue : public Epilogue, private EmitterBase {
public:
  OutputEpilogue(const EmitterBase &kernel, Value descale)
      : EmitterBase(kernel), descale(descale) {}

  void emit(ValueRange accs) override;

private:
  /// Swaps one bit of the element index with the same bit of the lane index
  /// inside each quad: elements `i` and `i + stride` pair up, `laneBit` says
  /// whether this lane's bit is set, and `perm` is the quad permutation that
  /// reaches the lane differing in that bit.
  void exchange(MutableArrayRef<Value> values, int64_t stride, Value laneBit,
                ArrayRef<int32_t> perm);
  /// Swaps bit 0 of the element index with bit 0 of the lane index inside
  /// each quad, for 16-bit elements packed in pairs: each dword keeps one half
  /// and takes the other from the neighbouring lane; `selector` is the lane's
  /// v_perm_b32 byte selector.
  void exchangeHalves(MutableArrayRef<Value> dwords, Value selector);
  /// Whether `bit` of the lane index is set.
  Value laneBitSet(int64_t bit);
  /// `value` of the lane that quad permutation `perm` names. Every lane reads
  /// a lane of its own quad, so the DPP's `old` value is never used: a poison
  /// one needs no copy.
  Value quadPerm(Value value, ArrayRef<int32_t> perm) {
    Value unused = LLVM::PoisonOp::create(b, value.getType());
    return amdgpu::DPPOp::create(b, value.getType(), unused, value,
                                 amdgpu::DPPPerm::quad_perm,
                                 b.getI32ArrayAttr(perm));
  }
  Value i32(int32_t v) {
    return arith::ConstantOp::create(b, b.getI32IntegerAttr(v));
  }

  /// The weight descale, loaded at kernel entry.
  Value descale;
};
} // namespace

Value OutputEpilogue::laneBitSet(int64_t bit) {
  // On i32: an index test would be a 64-bit compare.
  Value masked = arith::AndIOp::create(
      b, arith::IndexCastOp::create(b, b.getI32Type(), lane), i32(bit));
  return arith::CmpIOp::create(b, arith::CmpIPredicate::ne, masked, i32(0));
}

void OutputEpilogue::exchange(MutableArrayRef<Value> values, int64_t stride,
                              Value laneBit, ArrayRef<int32_t> perm) {
  for (int64_t i = 0, e = values.size(); i < e; ++i) {
    if (i & stride)
      continue;
    Value low = values[i], high = values[i + stride];
    // A lane keeps the element whose bit equals its lane bit and sends the
    // other one to its partner, which sends back the matching element.
    Value sent = arith::SelectOp::create(b, laneBit, low, high);
    Value received = quadPerm(sent, perm);
    values[i] = arith::SelectOp::create(b, laneBit, received, low);
    values[i + stride] = arith::SelectOp::create(b, laneBit, high, received);
  }
}

void OutputEpilogue::exchangeHalves(MutableArrayRef<Value> dwords,
                                    Value selector) {
  Type i32Type = b.getI32Type();
  for (Value &dword : dwords) {
    Value neighbour = quadPerm(dword, {1, 0, 3, 2});
    dword = LLVM::CallIntrinsicOp::create(
                b, i32Type, b.getStringAttr("llvm.amdgcn.perm"),
                ValueRange{neighbour, dword, selector})
                .getResult(0);
  }
}

void OutputEpilogue::emit(ValueRange accs) {
  int64_t run = p.mfma->accRowsPerRun;
  assert(run == kQuadLanes && p.mfma->n % kQuadLanes == 0 &&
         "a stored run is one quad's rows (or columns)");
  Type f32Type = b.getF32Type();
  Type i32Type = b.getI32Type();
  auto rowType = VectorType::get({run}, f32Type);
  auto storeType = VectorType::get({run}, p.yType);
  // Two 16-bit values per dword: the second exchange moves whole dwords.
  auto dwordsType = VectorType::get({run / 2}, i32Type);
  Value laneGroup = div(lane, p.mfma->n);
  Value laneInGroup = rem(lane, p.mfma->n);
  bool nTail = p.n % p.tile.getBlockN() != 0;

  // This lane's first row in the tile and the first of the `run` columns it
  // stores per N tile. A transposed tile gives a lane one row (lane % m) and
  // a run of columns as they are; otherwise quad lane j takes row j of a run
  // after the transpose, and its quad's first column.
  Value firstRowInTile, columnInTile;
  Value upperPair, halvesSelector;
  Value waveRow = mul(mul(waveM, p.mtPerWave), p.mfma->m);
  if (p.transposedTile) {
    firstRowInTile = add(waveRow, rem(lane, p.mfma->m));
    columnInTile = mul(laneGroup, run);
  } else {
    Value quadLane = rem(lane, kQuadLanes);
    firstRowInTile = add(waveRow, add(accumulatorRow(laneGroup, 0), quadLane));
    columnInTile = arith::SubIOp::create(b, laneInGroup, quadLane);
    upperPair = laneBitSet(2);
    // v_perm_b32 bytes 0-3 are the lane's own dword, 4-7 its neighbour's: an
    // even lane keeps its low half and appends the neighbour's low half, an
    // odd lane takes the neighbour's high half below its own high half.
    halvesSelector = arith::SelectOp::create(b, laneBitSet(1), i32(0x03020706),
                                             i32(0x05040100));
  }

  // Per N tile: the bias of this lane's accumulators (a run of columns, or
  // before the transpose its one column), and whether the run lies below N.
  SmallVector<Value> biasValues, storeColumns, wholeRuns;
  for (int64_t nt = 0; nt < p.ntPerWave; ++nt) {
    storeColumns.push_back(outputColumn(columnInTile, nt));
    if (nTail)
      wholeRuns.push_back(ult(add(storeColumns[nt], run - 1), cst(p.n)));
    if (!p.hasBias)
      continue;
    auto biasAt = [&](Value column) {
      if (nTail)
        column = minIdx(column, cst(p.n - 1));
      Value value = memref::LoadOp::create(
          b, bias, ValueRange{add(mul(batch, p.n), column)});
      return arith::ExtFOp::create(b, f32Type, value).getResult();
    };
    if (!p.transposedTile) {
      biasValues.push_back(vector::BroadcastOp::create(
          b, rowType, biasAt(outputColumn(laneInGroup, nt))));
      continue;
    }
    SmallVector<Value> columns;
    for (int64_t c = 0; c < run; ++c)
      columns.push_back(biasAt(add(storeColumns[nt], c)));
    biasValues.push_back(vector::FromElementsOp::create(b, rowType, columns));
  }

  // Offsets are i32 element indices: Y's memref extent (the launch contract,
  // docs/limits.md) is below 2^31. Other runs and MFMA row tiles are a
  // constant number of rows further than the first; rows are tested within
  // the tile, against the tile's rows below M.
  auto toI32 = [&](Value index) {
    return arith::IndexCastOp::create(b, i32Type, index);
  };
  Value firstOffset = toI32(
      add(add(getYTileBase(), mul(firstRowInTile, yStrideM)), storeColumns[0]));
  Value yStrideM32 = toI32(yStrideM);
  Value firstRow32 = toI32(firstRowInTile);
  Value tileRows =
      toI32(minIdx(arith::SubIOp::create(b, m, m0), cst(p.tile.getBlockM())));
  // Buffer stores: an element past the extent is dropped by the hardware's
  // range check, so a masked store is an offset select, not a branch.
  Value outOfRange =
      i32(static_cast<int32_t>(cast<MemRefType>(y.getType()).getNumElements()));
  auto store = [&](Value value, Value offset, Value valid) {
    if (valid)
      offset = arith::SelectOp::create(b, valid, offset, outOfRange);
    amdgpu::RawBufferStoreOp::create(b, value, y, ValueRange{offset},
                                     b.getBoolAttr(true), IntegerAttr(),
                                     Value());
  };
  auto addI32 = [&](Value x, int64_t v) {
    return v == 0 ? x : arith::AddIOp::create(b, x, i32(v)).getResult();
  };
  // One run of `run` adjacent columns of one row, at `offset`.
  auto storeRun = [&](Value values, Value offset, Value rowOk, int64_t nt) {
    if (!nTail) {
      store(values, offset, rowOk);
      return;
    }
    store(values, offset, arith::AndIOp::create(b, rowOk, wholeRuns[nt]));
    if (p.n % run == 0)
      return;
    // The one run that straddles N stores its columns below N one at a time.
    Value straddles = arith::AndIOp::create(
        b, rowOk,
        arith::XOrIOp::create(
            b, wholeRuns[nt],
            arith::ConstantOp::create(b, b.getBoolAttr(true))));
    for (int64_t c = 0; c < run - 1; ++c) {
      Value columnOk = ult(add(storeColumns[nt], c), cst(p.n));
      store(vector::ExtractOp::create(b, values, c), addI32(offset, c),
            arith::AndIOp::create(b, straddles, columnOk));
    }
  };

  for (int64_t mtw = 0; mtw < p.mtPerWave; ++mtw) {
    for (int64_t r0 = 0; r0 < p.accumulators; r0 += run) {
      int64_t rowDelta = mtw * p.mfma->m;
      if (!p.transposedTile)
        rowDelta += accumulatorRowOfLane0(r0);
      Value rowOffset = arith::AddIOp::create(
          b, firstOffset, arith::MulIOp::create(b, yStrideM32, i32(rowDelta)));
      Value rowOk = arith::CmpIOp::create(
          b, arith::CmpIPredicate::slt, firstRow32,
          arith::SubIOp::create(b, tileRows, i32(rowDelta)));
      for (int64_t nt = 0; nt < p.ntPerWave; ++nt) {
        // Descale and bias on the run as a vector: packed f32 operations.
        Value values = slice(accs[mtw * p.ntPerWave + nt], r0, run);
        values = arith::MulFOp::create(
            b, values, vector::BroadcastOp::create(b, rowType, descale));
        if (p.hasBias)
          values = arith::AddFOp::create(b, values, biasValues[nt]);
        Value rounded = arith::TruncFOp::create(b, storeType, values);
        if (!p.transposedTile) {
          // Rounded and packed (rows 0 and 1, 2 and 3), then rows become
          // columns: the low bit of the element and lane indices inside the
          // dwords, the high bit by moving whole dwords.
          Value packed = vector::BitCastOp::create(b, dwordsType, rounded);
          SmallVector<Value> dwords;
          for (int64_t d = 0; d < run / 2; ++d)
            dwords.push_back(vector::ExtractOp::create(b, packed, d));
          exchangeHalves(dwords, halvesSelector);
          exchange(dwords, 1, upperPair, {2, 3, 0, 1});
          rounded = vector::BitCastOp::create(
              b, storeType,
              vector::FromElementsOp::create(b, dwordsType, dwords));
        }
        storeRun(rounded, addI32(rowOffset, nt * p.mfma->n), rowOk, nt);
      }
    }
  }
}

std::unique_ptr<Epilogue>
mlir::mlafp8::createOutputEpilogue(const EmitterBase &kernel, Value descale) {
  return std::make_unique<OutputEpilogue>(kernel, descale);
}
