//===- MLAFP8Ops.cpp - mlafp8 operations ----------------------------------===//

#include "mla-fp8/Dialect/MLAFP8/IR/MLAFP8Ops.h"

#include "mla-fp8/ABI/KernelDescription.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::mlafp8;

FailureOr<double> mlir::mlafp8::getFP8MaxFinite(Type type) {
  if (isa<Float8E4M3FNUZType>(type))
    return 240.0;
  if (isa<Float8E4M3FNType>(type))
    return 448.0;
  return failure();
}

/// Whether two dimension sizes may describe the same extent (dynamic matches
/// all).
static bool dimsAgree(int64_t a, int64_t b) {
  return ShapedType::isDynamic(a) || ShapedType::isDynamic(b) || a == b;
}

static std::string dimToString(int64_t d) {
  return ShapedType::isDynamic(d) ? std::string("?") : std::to_string(d);
}

static LogicalResult verifyGroupSize(Operation *op, int64_t groupSize) {
  if (groupSize <= 0 || !llvm::isPowerOf2_64(groupSize))
    return op->emitOpError("group_size must be a positive power of two, got ")
           << groupSize;
  return success();
}

static LogicalResult verifyRank3(Operation *op, StringRef name,
                                 RankedTensorType type) {
  if (type.getRank() != 3)
    return op->emitOpError()
           << name << " must be a rank-3 tensor, got " << type;
  return success();
}

static LogicalResult verifyActivationType(Operation *op, StringRef name,
                                          RankedTensorType type) {
  if (!type.getElementType().isBF16() && !type.getElementType().isF16())
    return op->emitOpError()
           << name << " element type must be bf16 or f16, got "
           << type.getElementType();
  return success();
}

static LogicalResult verifyFP8Type(Operation *op, StringRef name,
                                   RankedTensorType type) {
  if (failed(getFP8MaxFinite(type.getElementType())))
    return op->emitOpError()
           << name << " element type must be f8E4M3FNUZ or f8E4M3FN, got "
           << type.getElementType();
  return success();
}

/// Checks `scales` against the quantized activations it belongs to: f32, the
/// two leading dims of `x`, and one column per group.
static LogicalResult verifyScales(Operation *op, RankedTensorType xType,
                                  RankedTensorType scalesType,
                                  int64_t groupSize) {
  if (failed(verifyRank3(op, "scales", scalesType)))
    return failure();
  if (!scalesType.getElementType().isF32())
    return op->emitOpError("scales element type must be f32, got ")
           << scalesType.getElementType();
  int64_t k = xType.getDimSize(2);
  int64_t groups = ShapedType::isDynamic(k) ? ShapedType::kDynamic
                                            : llvm::divideCeil(k, groupSize);
  for (int i = 0; i < 3; ++i) {
    int64_t expected = i < 2 ? xType.getDimSize(i) : groups;
    if (!dimsAgree(scalesType.getDimSize(i), expected))
      return op->emitOpError()
             << "scales dimension " << i << " must be " << dimToString(expected)
             << ", got " << scalesType.getDimSize(i);
  }
  return success();
}

namespace {
/// The operands and attributes that `scaled_bmm` and `prequant_bmm` share.
struct BmmOperands {
  RankedTensorType x, w, wScale, bias, y;
  WeightScale wScaleMode;
  BatchLayout xLayout, yLayout;
};
} // namespace

/// Checks the GEMM shape rules of SPEC.md common to both batched matmuls:
/// x (B,M,K) or (M,B,K), w (B,N,K) with static N and K, the weight descale,
/// the optional bias (B,N) and y (B,M,N) or (M,B,N).
static LogicalResult verifyBmm(Operation *op, const BmmOperands &ops) {
  if (failed(verifyRank3(op, "x", ops.x)) ||
      failed(verifyRank3(op, "w", ops.w)) ||
      failed(verifyFP8Type(op, "w", ops.w)) ||
      failed(verifyRank3(op, "y", ops.y)))
    return failure();

  int64_t n = ops.w.getDimSize(1), k = ops.w.getDimSize(2);
  if (ShapedType::isDynamic(n) || ShapedType::isDynamic(k))
    return op->emitOpError("w must have static N and K dimensions, got ")
           << ops.w;
  if (n < 1 || k < 1)
    return op->emitOpError("w must have N and K of at least 1, got ") << ops.w;
  if (n > kernel_abi::kMaxKernelDimension ||
      k > kernel_abi::kMaxKernelDimension)
    return op->emitOpError("w must have N and K of at most ")
           << kernel_abi::kMaxKernelDimension << ", got " << ops.w;

  bool xTokenMajor = ops.xLayout == BatchLayout::MB;
  int64_t batch = ops.w.getDimSize(0);
  int64_t xBatch = ops.x.getDimSize(xTokenMajor ? 1 : 0);
  int64_t m = ops.x.getDimSize(xTokenMajor ? 0 : 1);
  if (!dimsAgree(ops.x.getDimSize(2), k))
    return op->emitOpError() << "x reduction dimension must be " << k
                             << " (K of w), got " << ops.x.getDimSize(2);
  if (!dimsAgree(xBatch, batch))
    return op->emitOpError() << "x batch dimension " << dimToString(xBatch)
                             << " does not match the batch dimension of w, "
                             << dimToString(batch);
  if (ShapedType::isDynamic(batch))
    batch = xBatch;

  if (ops.wScale.getRank() != 1 || !ops.wScale.getElementType().isF32())
    return op->emitOpError("w_scale must be a rank-1 tensor of f32, got ")
           << ops.wScale;
  int64_t scaleCount = ops.wScale.getDimSize(0);
  if (ops.wScaleMode == WeightScale::PerTensor && scaleCount != 1)
    return op->emitOpError("per_tensor w_scale must hold exactly 1 value, got ")
           << ops.wScale;
  if (ops.wScaleMode == WeightScale::PerBatch && !dimsAgree(scaleCount, batch))
    return op->emitOpError() << "per_batch w_scale must hold one value per "
                                "batch element ("
                             << dimToString(batch) << "), got " << ops.wScale;

  Type outType = ops.y.getElementType();
  if (!outType.isBF16() && !outType.isF16())
    return op->emitOpError("y element type must be bf16 or f16, got ")
           << outType;
  bool yTokenMajor = ops.yLayout == BatchLayout::MB;
  int64_t yBatch = ops.y.getDimSize(yTokenMajor ? 1 : 0);
  int64_t yM = ops.y.getDimSize(yTokenMajor ? 0 : 1);
  if (!dimsAgree(yBatch, batch))
    return op->emitOpError()
           << "y batch dimension must be " << dimToString(batch) << ", got "
           << dimToString(yBatch);
  if (!dimsAgree(yM, m))
    return op->emitOpError() << "y token dimension must be " << dimToString(m)
                             << " (M of x), got " << dimToString(yM);
  if (ops.y.getDimSize(2) != n)
    return op->emitOpError()
           << "y last dimension must be " << n << " (N of w), got "
           << dimToString(ops.y.getDimSize(2));

  if (ops.bias) {
    if (ops.bias.getRank() != 2)
      return op->emitOpError("bias must be a rank-2 (B, N) tensor, got ")
             << ops.bias;
    if (ops.bias.getElementType() != outType)
      return op->emitOpError() << "bias element type must match y (" << outType
                               << "), got " << ops.bias.getElementType();
    if (!dimsAgree(ops.bias.getDimSize(0), batch) ||
        ops.bias.getDimSize(1) != n)
      return op->emitOpError() << "bias must be (" << dimToString(batch) << ", "
                               << n << "), got " << ops.bias;
  }
  return success();
}

/// The shared operands of `scaled_bmm` and `prequant_bmm`; `x` is the
/// activation operand's type (fp8 `q` or bf16/f16 `x`).
template <typename OpTy>
static BmmOperands getBmmOperands(OpTy op, RankedTensorType x) {
  return {x,
          op.getW().getType(),
          op.getWScale().getType(),
          op.getBias() ? op.getBias().getType() : RankedTensorType(),
          op.getY().getType(),
          op.getWScaleMode(),
          op.getXLayout(),
          op.getYLayout()};
}

//===----------------------------------------------------------------------===//
// GroupQuantOp
//===----------------------------------------------------------------------===//

LogicalResult GroupQuantOp::verify() {
  Operation *op = getOperation();
  auto xType = getX().getType();
  auto qType = getQ().getType();
  if (failed(verifyGroupSize(op, getGroupSize())) ||
      failed(verifyRank3(op, "x", xType)) ||
      failed(verifyActivationType(op, "x", xType)) ||
      failed(verifyRank3(op, "q", qType)) ||
      failed(verifyFP8Type(op, "q", qType)))
    return failure();
  for (int i = 0; i < 3; ++i)
    if (!dimsAgree(qType.getDimSize(i), xType.getDimSize(i)))
      return emitOpError() << "q dimension " << i << " must be "
                           << dimToString(xType.getDimSize(i))
                           << " (as x), got " << qType.getDimSize(i);
  if (ShapedType::isDynamic(xType.getDimSize(2)))
    return emitOpError("x must have a static last dimension, got ") << xType;
  return verifyScales(op, xType, getScales().getType(), getGroupSize());
}

//===----------------------------------------------------------------------===//
// ScaledBmmOp
//===----------------------------------------------------------------------===//

LogicalResult ScaledBmmOp::verify() {
  Operation *op = getOperation();
  auto qType = getQ().getType();
  if (failed(verifyGroupSize(op, getGroupSize())) ||
      failed(verifyRank3(op, "q", qType)) ||
      failed(verifyFP8Type(op, "q", qType)))
    return failure();
  auto wType = getW().getType();
  if (wType.getElementType() != qType.getElementType())
    return emitOpError() << "w element type must match q ("
                         << qType.getElementType() << "), got "
                         << wType.getElementType();
  if (failed(verifyBmm(op, getBmmOperands(*this, qType))))
    return failure();
  return verifyScales(op, qType, getScales().getType(), getGroupSize());
}

//===----------------------------------------------------------------------===//
// PrequantBmmOp
//===----------------------------------------------------------------------===//

int64_t PrequantBmmOp::getN() { return getW().getType().getDimSize(1); }
int64_t PrequantBmmOp::getK() { return getW().getType().getDimSize(2); }
int64_t PrequantBmmOp::getNumGroups() {
  return llvm::divideCeil(getK(), getGroupSize());
}

LogicalResult PrequantBmmOp::verify() {
  Operation *op = getOperation();
  auto xType = getX().getType();
  if (failed(verifyGroupSize(op, getGroupSize())) ||
      failed(verifyRank3(op, "x", xType)) ||
      failed(verifyActivationType(op, "x", xType)))
    return failure();
  if (failed(verifyBmm(op, getBmmOperands(*this, xType))))
    return failure();

  std::optional<ArrayAttr> tiles = getTiles();
  if (std::optional<ArrayAttr> kernels = getKernels();
      kernels && (!tiles || kernels->size() != tiles->size()))
    return emitOpError() << "kernels must hold one symbol per tile ("
                         << (tiles ? tiles->size() : 0) << "), got "
                         << kernels->size();
  if (!tiles)
    return success();
  if (tiles->empty())
    return emitOpError("tiles must hold at least one #mlafp8.tile");
  int64_t nextRows = 1;
  for (auto [index, attr] : llvm::enumerate(*tiles)) {
    auto tile = cast<TileAttr>(attr);
    if (nextRows == 0)
      return emitOpError() << "tile " << index
                           << " follows a tile with no upper bound on rows";
    if (tile.getMinRows() != nextRows)
      return emitOpError() << "tiles must cover every row count B * M in "
                              "order: tile "
                           << index << " starts at rows = " << tile.getMinRows()
                           << ", expected " << nextRows;
    if (tile.getSplitK() > getNumGroups())
      return emitOpError() << "tile " << index << " split_k "
                           << tile.getSplitK() << " exceeds the "
                           << getNumGroups() << " K-groups";
    nextRows = tile.getMaxRows() == 0 ? 0 : tile.getMaxRows() + 1;
  }
  if (nextRows != 0)
    return emitOpError() << "the last tile must have no upper bound on rows "
                            "(max_rows = 0), got max_rows = "
                         << nextRows - 1;
  return success();
}

#define GET_OP_CLASSES
#include "mla-fp8/Dialect/MLAFP8/IR/MLAFP8Ops.cpp.inc"
