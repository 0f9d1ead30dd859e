//===- KernelSet.cpp - the kernels an AOT run generates -------------------===//

#include "mla-fp8/AOT/KernelSet.h"

#include "mla-fp8/Dialect/MLAFP8/IR/MLAFP8Ops.h"
#include "mla-fp8/Runtime/KernelTable.h"
#include "mla-fp8/Target/Chip.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <map>

using namespace mlir;
using namespace mlir::mlafp8;

static llvm::Error makeError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

std::string KernelGroupSpec::getBaseName() const {
  return llvm::formatv("mla_fp8_{0}_n{1}_k{2}_g{3}_{4}_{5}{6}_{7}", shape.name,
                       shape.n, shape.k, groupSize, outType,
                       weightScale == WeightScale::PerTensor ? "pt" : "pb",
                       hasBias ? "_bias" : "", chip)
      .str();
}

llvm::Expected<std::vector<KernelGroupSpec>>
mlir::mlafp8::buildKernelSet(const KernelSetOptions &options) {
  const ModelDims &dims = options.dims;
  if (dims.heads < 1 || dims.kvLoraRank < 1 || dims.qkNopeHeadDim < 1 ||
      dims.vHeadDim < 1)
    return makeError(llvm::formatv(
        "model dimensions must be positive: heads {0}, kv_lora_rank {1}, "
        "qk_nope_head_dim {2}, v_head_dim {3}",
        dims.heads, dims.kvLoraRank, dims.qkNopeHeadDim, dims.vHeadDim));
  // The loader refuses a manifest whose M bounds exceed what the kernels
  // index: such a bundle must not be published over a good one.
  if (options.maxM < 1 || options.maxM > runtime::kMaxManifestM)
    return makeError(llvm::formatv("--max-m must be between 1 and {0}, got {1}",
                                   runtime::kMaxManifestM, options.maxM));
  if (options.groupSize < 1 || (options.groupSize & (options.groupSize - 1)))
    return makeError(
        llvm::formatv("group size must be a positive power of two, got {0}",
                      options.groupSize));
  if (options.outType != "bf16" && options.outType != "f16")
    return makeError("output type must be bf16 or f16, got '" +
                     options.outType + "'");
  if (options.chips.empty())
    return makeError("no chip given");
  if (options.tp.empty())
    return makeError("no tensor-parallel degree given");

  std::vector<int64_t> batches, degrees;
  for (int64_t tp : options.tp) {
    if (tp < 1)
      return makeError(llvm::formatv(
          "tensor-parallel degree must be at least 1, got {0}", tp));
    if (dims.heads % tp != 0) {
      if (options.tpExplicit)
        return makeError(llvm::formatv(
            "tensor-parallel degree {0} does not divide the {1} heads of {2}",
            tp, dims.heads, options.model));
      continue;
    }
    if (llvm::is_contained(degrees, tp))
      continue;
    degrees.push_back(tp);
    batches.push_back(dims.heads / tp);
  }
  if (degrees.empty())
    return makeError(
        llvm::formatv("no tensor-parallel degree divides the {0} heads of {1}",
                      dims.heads, options.model));

  // K-up: q_nope (H, M, P) x W_UK (H, L, P); V-up: o (H, M, L) x W_UV (H, V,
  // L).
  ProjectionShape kUp{"k_up", dims.kvLoraRank, dims.qkNopeHeadDim, batches,
                      degrees};
  ProjectionShape vUp{"v_up", dims.vHeadDim, dims.kvLoraRank, batches, degrees};

  std::vector<KernelGroupSpec> groups;
  for (const std::string &chipName : options.chips) {
    const ChipInfo *chip = lookupChip(chipName);
    if (!chip)
      return makeError(describeUnsupportedChip(chipName));
    if (llvm::any_of(groups, [&](const KernelGroupSpec &g) {
          return g.chip == chipName;
        }))
      continue;
    for (bool bias : {false, true}) {
      if (bias && !options.bias)
        continue;
      for (const ProjectionShape &shape : {kUp, vUp}) {
        KernelGroupSpec spec;
        spec.hasBias = bias;
        spec.shape = shape;
        spec.chip = chipName;
        spec.fp8Type = chip->fp8E4M3TypeName.str();
        spec.outType = options.outType;
        spec.weightScale = options.weightScale;
        spec.groupSize = options.groupSize;
        spec.maxM = options.maxM;
        groups.push_back(std::move(spec));
      }
    }
  }
  return groups;
}

llvm::Expected<SmallVector<TileConfig>>
mlir::mlafp8::getGroupTiles(const KernelGroupSpec &spec) {
  llvm::Expected<TileSelection> selection =
      selectTiles(spec.chip, spec.shape.n, spec.shape.k, spec.groupSize);
  if (!selection)
    return selection.takeError();
  SmallVector<TileConfig> kept;
  for (const TileConfig &tile : selection->tiles)
    if (tile.minM <= spec.maxM)
      kept.push_back(tile);
  if (kept.empty())
    return makeError("no tile serves M = 1 for " + spec.getBaseName());
  kept.back().maxM = 0;
  return kept;
}

/// Parses one of the element types a kernel spec names.
static Type parseElementType(MLIRContext &context, StringRef name) {
  Builder b(&context);
  if (name == "bf16")
    return b.getBF16Type();
  if (name == "f16")
    return b.getF16Type();
  if (name == "f8E4M3FNUZ")
    return b.getType<Float8E4M3FNUZType>();
  if (name == "f8E4M3FN")
    return b.getType<Float8E4M3FNType>();
  return {};
}

OwningOpRef<ModuleOp>
mlir::mlafp8::buildKernelGroupModule(MLIRContext &context,
                                     const KernelGroupSpec &spec) {
  context.loadDialect<MLAFP8Dialect, func::FuncDialect>();
  OpBuilder b(&context);
  Location loc = b.getUnknownLoc();
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  b.setInsertionPointToEnd(module->getBody());

  int64_t dyn = ShapedType::kDynamic;
  Type inType = parseElementType(context, spec.inType);
  Type outType = parseElementType(context, spec.outType);
  Type fp8Type = parseElementType(context, spec.fp8Type);
  auto xType = RankedTensorType::get({dyn, dyn, spec.shape.k}, inType);
  auto wType =
      RankedTensorType::get({dyn, spec.shape.n, spec.shape.k}, fp8Type);
  int64_t scales = spec.weightScale == WeightScale::PerTensor ? 1 : dyn;
  auto wsType = RankedTensorType::get({scales}, b.getF32Type());
  auto yType = RankedTensorType::get({dyn, dyn, spec.shape.n}, outType);
  SmallVector<Type> inputs = {xType, wType, wsType};
  if (spec.hasBias)
    inputs.push_back(RankedTensorType::get({dyn, spec.shape.n}, outType));

  auto func = func::FuncOp::create(b, loc, spec.getBaseName(),
                                   b.getFunctionType(inputs, {yType}));
  Block *body = func.addEntryBlock();
  b.setInsertionPointToEnd(body);
  Value bias = spec.hasBias ? body->getArgument(3) : Value();
  auto bmm = PrequantBmmOp::create(
      b, loc, yType, body->getArgument(0), body->getArgument(1),
      body->getArgument(2), bias, b.getI64IntegerAttr(spec.groupSize),
      WeightScaleAttr::get(&context, spec.weightScale),
      BatchLayoutAttr::get(&context, BatchLayout::BM),
      BatchLayoutAttr::get(&context, BatchLayout::BM), /*tiles=*/nullptr,
      /*kernels=*/nullptr);
  func::ReturnOp::create(b, loc, bmm.getY());
  return module;
}
