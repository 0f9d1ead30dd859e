//===- FusePrequant.cpp - fuse group_quant into the fp8 bmm ---------------===//

#include "mla-fp8/Dialect/MLAFP8/Transforms/Passes.h"

#include "mla-fp8/Dialect/MLAFP8/IR/MLAFP8Ops.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::mlafp8 {
#define GEN_PASS_DEF_MLAFP8FUSEPREQUANTPASS
#include "mla-fp8/Dialect/MLAFP8/Transforms/Passes.h.inc"
} // namespace mlir::mlafp8

using namespace mlir;
using namespace mlir::mlafp8;

namespace {
/// group_quant(x) -> scaled_bmm(q, s, ...)  ==>  prequant_bmm(x, ...), when the
/// quantized activations and scales exist only for this matmul.
struct FuseGroupQuantIntoBmm : OpRewritePattern<ScaledBmmOp> {
  using Base::Base;

  LogicalResult matchAndRewrite(ScaledBmmOp bmm,
                                PatternRewriter &rewriter) const override {
    auto quant = bmm.getQ().getDefiningOp<GroupQuantOp>();
    if (!quant)
      return rewriter.notifyMatchFailure(bmm, "q is not made by group_quant");
    if (bmm.getScales() != quant.getScales())
      return rewriter.notifyMatchFailure(
          bmm, "scales do not come from the same group_quant");
    if (quant.getGroupSize() != bmm.getGroupSize())
      return rewriter.notifyMatchFailure(bmm, "group sizes differ");
    if (!quant.getQ().hasOneUse() || !quant.getScales().hasOneUse())
      return rewriter.notifyMatchFailure(
          bmm, "quantized activations have other uses");

    auto fused = PrequantBmmOp::create(
        rewriter, bmm.getLoc(), bmm.getY().getType(), quant.getX(), bmm.getW(),
        bmm.getWScale(), bmm.getBias(), bmm.getGroupSizeAttr(),
        bmm.getWScaleModeAttr(), bmm.getXLayoutAttr(), bmm.getYLayoutAttr(),
        /*tiles=*/nullptr, /*kernels=*/nullptr);
    rewriter.replaceOp(bmm, fused.getY());
    rewriter.eraseOp(quant);
    return success();
  }
};

struct FusePrequantPass
    : mlafp8::impl::MLAFP8FusePrequantPassBase<FusePrequantPass> {
  using Base::Base;

  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateFusePrequantPatterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace

void mlir::mlafp8::populateFusePrequantPatterns(RewritePatternSet &patterns) {
  patterns.add<FuseGroupQuantIntoBmm>(patterns.getContext());
}
