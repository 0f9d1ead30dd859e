//===- SplitKEpilogue.cpp - The split-K reduction through the workspace ---===//
//
// The workspace layout and the zero-once contract are ABI/KernelABI.h's.
//
//===----------------------------------------------------------------------===//

#include "Epilogue.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace mlir::mlafp8;

namespace {
class SplitKEpilogue : public Epilogue, private EmitterBase {
public:
  SplitKEpilogue(const EmitterBase &kernel, std::unique_ptr<Epilogue> output)
      : EmitterBase(kernel), output(std::move(output)) {}

  void emit(ValueRange accs) override;

private:
  /// An !llvm.ptr<1> to u32 element `index` of the workspace.
  Value workspaceCounter(Value index);

  std::unique_ptr<Epilogue> output;
};
} // namespace

Value SplitKEpilogue::workspaceCounter(Value index) {
  // memref.atomic_rmw has no memory scope (it would be system-wide, writing
  // back the whole L2): the counter is updated with an agent-scope LLVM
  // atomic on the workspace's raw pointer.
  MLIRContext *context = b.getContext();
  Type i64Type = b.getI64Type();
  auto ptrType = LLVM::LLVMPointerType::get(context, 1);
  Value base = memref::ExtractAlignedPointerAsIndexOp::create(b, workspace);
  base = arith::IndexCastOp::create(b, i64Type, base);
  base = LLVM::IntToPtrOp::create(b, ptrType, base);
  Value offset = arith::IndexCastOp::create(b, i64Type, index);
  return LLVM::GEPOp::create(b, ptrType, b.getI32Type(), base,
                             ValueRange{offset});
}

void SplitKEpilogue::emit(ValueRange accs) {
  int64_t elements = p.accumulators;
  int64_t blockM = p.tile.getBlockM();
  int64_t tileElements = blockM * p.tile.getBlockN();
  int64_t splitK = p.tile.getSplitK();
  // Workspace block of (batch, M tile): [N tile][split][tile] f32 partials,
  // then one u32 counter per N tile. Inside a partial tile, each lane's
  // accumulators lie contiguously in register order: [wave][accumulator]
  // [lane][element], one 16-byte access per 4 elements.
  Value mTiles = div(add(m, blockM - 1), blockM);
  Value blockBase =
      mul(add(mul(batch, mTiles), mTile), p.workspaceBlockElements);
  Value tilesBase = add(blockBase, mul(nTile, splitK * tileElements));
  int64_t accStride = p.waveSize * elements;
  Value laneOffset =
      add(mul(wave, int64_t(accs.size()) * accStride), mul(lane, elements));
  auto partialOffset = [&](Value s, int64_t acc) {
    return add(add(tilesBase, mul(s, tileElements)),
               add(laneOffset, acc * accStride));
  };
  for (auto [index, acc] : llvm::enumerate(accs)) {
    auto store = vector::StoreOp::create(
        b, acc, workspace, ValueRange{partialOffset(split, index)});
    store.setAlignment(uint64_t(16));
  }
  // Every lane's partial is visible device-wide before the workgroup counts
  // itself in.
  LLVM::FenceOp::create(b, LLVM::AtomicOrdering::release, "agent");
  gpu::BarrierOp::create(b);

  // One lane counts the arrival; the last of the split_k arrivals resets the
  // counter (the workspace is reusable without re-zeroing) and tells the
  // workgroup through LDS (ldsScales is free: every wave has passed the
  // barrier above, after its last read of the scales).
  Value counterIndex = add(add(blockBase, p.workspaceCountersElement), nTile);
  Value first = arith::CmpIOp::create(b, arith::CmpIPredicate::eq, tid, cst(0));
  emitIf(first, [&] {
    Value counter = workspaceCounter(counterIndex);
    Value one = arith::ConstantOp::create(b, b.getI32IntegerAttr(1));
    Value old =
        LLVM::AtomicRMWOp::create(b, LLVM::AtomicBinOp::add, counter, one,
                                  LLVM::AtomicOrdering::monotonic, "agent");
    Value last = arith::CmpIOp::create(
        b, arith::CmpIPredicate::eq, old,
        arith::ConstantOp::create(b, b.getI32IntegerAttr(splitK - 1)));
    emitIf(last, [&] {
      Value zero = arith::ConstantOp::create(b, b.getI32IntegerAttr(0));
      LLVM::AtomicRMWOp::create(b, LLVM::AtomicBinOp::xchg, counter, zero,
                                LLVM::AtomicOrdering::monotonic, "agent");
    });
    Value flag = arith::SelectOp::create(b, last, f32(1.0f), f32(0.0f));
    memref::StoreOp::create(b, flag, ldsScales, ValueRange{cst(0)});
  });
  gpu::BarrierOp::create(b);
  Value flag = memref::LoadOp::create(b, ldsScales, ValueRange{cst(0)});
  Value isLast =
      arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, flag, f32(1.0f));
  emitIf(isLast, [&] {
    // The other splits' partials, released before their counts.
    LLVM::FenceOp::create(b, LLVM::AtomicOrdering::acquire, "agent");
    // Every split's partial is loaded before the first sum needs one: one
    // memory round trip. This workgroup's own partial is read back too (it
    // is in the workspace bit for bit), so no load waits behind a branch.
    SmallVector<Value> parts;
    for (int64_t index = 0, e = accs.size(); index < e; ++index) {
      for (int64_t s = 0; s < splitK; ++s) {
        auto load = vector::LoadOp::create(
            b, accType, workspace, ValueRange{partialOffset(cst(s), index)});
        load.setAlignment(uint64_t(16));
        parts.push_back(load);
      }
    }
    // Sum in split order 0, 1, ..., split_k - 1 whatever the arrival order:
    // the same bits every run.
    SmallVector<Value> totals;
    for (int64_t index = 0, e = accs.size(); index < e; ++index) {
      Value total = parts[index * splitK];
      for (int64_t s = 1; s < splitK; ++s)
        total = arith::AddFOp::create(b, total, parts[index * splitK + s]);
      totals.push_back(total);
    }
    output->emit(totals);
  });
}

std::unique_ptr<Epilogue>
mlir::mlafp8::createSplitKEpilogue(const EmitterBase &kernel,
                                   std::unique_ptr<Epilogue> output) {
  return std::make_unique<SplitKEpilogue>(kernel, std::move(output));
}
