//===- SelectTiles.cpp - attach tile configurations to prequant_bmm -------===//

#include "mla-fp8/Dialect/MLAFP8/Transforms/Passes.h"

#include "mla-fp8/Dialect/MLAFP8/IR/MLAFP8Ops.h"
#include "mla-fp8/Dialect/MLAFP8/Transforms/TileSelection.h"
#include "mla-fp8/Target/Chip.h"

#include "mlir/IR/Builders.h"

namespace mlir::mlafp8 {
#define GEN_PASS_DEF_MLAFP8SELECTTILESPASS
#include "mla-fp8/Dialect/MLAFP8/Transforms/Passes.h.inc"
} // namespace mlir::mlafp8

using namespace mlir;
using namespace mlir::mlafp8;

namespace {
struct SelectTilesPass
    : mlafp8::impl::MLAFP8SelectTilesPassBase<SelectTilesPass> {
  using Base::Base;

  void runOnOperation() override {
    const ChipInfo *chipInfo =
        lookupChipOrEmitError(getOperation()->getLoc(), chip);
    if (!chipInfo)
      return signalPassFailure();
    WalkResult result = getOperation()->walk([&](PrequantBmmOp op) {
      if (std::optional<std::string> message = checkFP8FormatForChip(
              *chipInfo, op.getW().getType().getElementType())) {
        op.emitOpError() << *message;
        return WalkResult::interrupt();
      }
      if (op.getTiles())
        return WalkResult::advance();
      llvm::Expected<TileSelection> selection =
          selectTiles(chip, op.getN(), op.getK(), op.getGroupSize());
      if (!selection) {
        op.emitOpError() << llvm::toString(selection.takeError());
        return WalkResult::interrupt();
      }
      SmallVector<Attribute> tiles;
      for (const TileConfig &tile : selection->tiles)
        tiles.push_back(tile.toAttr(op.getContext()));
      op.setTilesAttr(ArrayAttr::get(op.getContext(), tiles));
      return WalkResult::advance();
    });
    if (result.wasInterrupted())
      signalPassFailure();
  }
};
} // namespace
