//===- KernelSet.cpp - the kernels an AOT run generates -------------------===//

#include "mla-fp8/AOT/KernelSet.h"

#include "mla-fp8/Dialect/MLAFP8/IR/MLAFP8Ops.h"
#include "mla-fp8/Hardware/Chip.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <limits>

using namespace mlir;
using namespace mlir::mlafp8;

static llvm::Error makeError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

std::string KernelGroupSpec::getBaseName() const {
  std::string inType = kernel.inType == "bf16" ? "" : "_x" + kernel.inType;
  return llvm::formatv(
             "mla_fp8_{0}_n{1}_k{2}_g{3}{8}_{4}_{5}{6}_{7}", projection,
             kernel.n, kernel.k, kernel.groupSize, kernel.outType,
             kernel.weightScale == kernel_abi::WeightScaleMode::PerTensor
                 ? "pt"
                 : "pb",
             kernel.hasBias ? "_bias" : "", kernel.chip, inType)
      .str();
}

llvm::Expected<std::vector<KernelGroupSpec>>
mlir::mlafp8::buildKernelSet(const KernelSetOptions &options) {
  if (llvm::Error err = checkKernelSetOptions(options))
    return std::move(err);
  // Each projection's batches at the TP degrees that divide its batch at TP
  // 1 (the heads, or the output groups), in the order given.
  auto batchesOf = [&](int64_t atTp1, std::vector<int64_t> &batches,
                       std::vector<int64_t> &degrees) {
    for (int64_t tp : options.tp)
      if (options.dims.splitsOver(tp) && !llvm::is_contained(degrees, tp)) {
        degrees.push_back(tp);
        batches.push_back(atTp1 / tp);
      }
  };
  const SmallVector<ModelProjection, 3> projections =
      getModelProjections(options.dims);

  // Each chip, activation type and epilogue once, in the order given.
  auto unique = [](const std::vector<std::string> &names) {
    std::vector<llvm::StringRef> kept;
    for (const std::string &name : names)
      if (!llvm::is_contained(kept, name))
        kept.push_back(name);
    return kept;
  };
  std::vector<bool> biases = {false};
  if (options.bias)
    biases.push_back(true);
  std::vector<KernelGroupSpec> groups;
  for (llvm::StringRef chipName : unique(options.chips))
    for (llvm::StringRef inType : unique(options.inTypes))
      for (bool bias : biases)
        for (const ModelProjection &projection : projections) {
          KernelGroupSpec spec;
          spec.projection = projection.name.str();
          batchesOf(projection.batchAtTp1, spec.batches, spec.tp);
          spec.kernel.chip = chipName.str();
          spec.kernel.n = projection.n;
          spec.kernel.k = projection.k;
          spec.kernel.groupSize = options.groupSize;
          spec.kernel.inType = inType.str();
          spec.kernel.fp8Type = lookupChip(chipName)->fp8E4M3TypeName.str();
          spec.kernel.outType = options.outType;
          spec.kernel.weightScale = options.weightScale;
          spec.kernel.hasBias = bias;
          spec.maxM = options.maxM;
          spec.codeObjectVersion = options.codeObjectVersion;
          for (const auto &[name, tile] : options.tiles)
            if (name == projection.name)
              spec.tiles = {tile};
          // The tile table decides what it supports (group sizes, for one):
          // asking it now fails before anything is compiled.
          if (llvm::Expected<SmallVector<TileConfig>> tiles =
                  getGroupTiles(spec);
              !tiles)
            return tiles.takeError();
          if (llvm::Error error = verifyExplicitTiles(spec))
            return error;
          groups.push_back(std::move(spec));
        }
  return groups;
}

void mlir::mlafp8::appendDiagnostic(std::string &text, Diagnostic &diag) {
  if (!text.empty())
    text += "; ";
  llvm::raw_string_ostream os(text);
  if (!isa<UnknownLoc>(diag.getLocation()))
    os << diag.getLocation() << ": ";
  os << diag;
}

llvm::Expected<TileConfig> mlir::mlafp8::parseTileSpec(llvm::StringRef text) {
  SmallVector<llvm::StringRef, 4> parts, dims;
  text.split(parts, ':');
  parts[0].split(dims, 'x');
  TileConfig t;
  t.minRows = 1;
  t.maxRows = 0;
  auto bad = [&](const llvm::Twine &why) {
    return llvm::createStringError("bad tile '" + text + "' (" + why +
                                   "): expected "
                                   "BMxBNxWAVES:MFMA[:SPLIT_K[:STAGES]]");
  };
  if (dims.size() != 3 || parts.size() < 2 || parts.size() > 4 ||
      dims[0].getAsInteger(10, t.blockM) ||
      dims[1].getAsInteger(10, t.blockN) || dims[2].getAsInteger(10, t.waves))
    return bad("not of that form");
  t.mfma = lookupMfma(parts[1]);
  if (!t.mfma)
    return bad("no MFMA record is named '" + parts[1] + "'");
  if ((parts.size() > 2 && parts[2].getAsInteger(10, t.splitK)) ||
      (parts.size() > 3 && parts[3].getAsInteger(10, t.stages)))
    return bad("SPLIT_K and STAGES are integers");
  // Positive before anything divides by them; the tile attribute's verifier
  // checks the rest when the kernel compiles.
  for (int64_t v : {t.blockM, t.blockN, t.waves, t.splitK, t.stages})
    if (v < 1)
      return bad("every number must be positive");
  return t;
}

llvm::Expected<SmallVector<TileConfig>>
mlir::mlafp8::getGroupTiles(const KernelGroupSpec &spec) {
  if (!spec.tiles.empty())
    return SmallVector<TileConfig>(spec.tiles.begin(), spec.tiles.end());
  llvm::Expected<TileSelection> selection = selectTiles(
      spec.kernel.chip, spec.kernel.n, spec.kernel.k, spec.kernel.groupSize);
  if (!selection)
    return selection.takeError();
  SmallVector<TileConfig> kept;
  int64_t plannedRows = spec.getPlannedRows();
  for (const TileConfig &tile : selection->tiles)
    if (tile.minRows <= plannedRows)
      kept.push_back(tile);
  if (kept.empty())
    return makeError("no tile serves one row for " + spec.getBaseName());
  kept.back().maxRows = 0;
  return kept;
}

int64_t KernelGroupSpec::getPlannedRows() const {
  int64_t batch = batches.empty()
                      ? kPlanningBatch
                      : *std::max_element(batches.begin(), batches.end());
  int64_t rows;
  if (__builtin_mul_overflow(maxM, std::max<int64_t>(batch, 1), &rows))
    return std::numeric_limits<int64_t>::max();
  return rows;
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
  const kernel_abi::KernelDescription &kernel = spec.kernel;
  bool perTensor = kernel.weightScale == kernel_abi::WeightScaleMode::PerTensor;
  Type inType = parseElementType(context, kernel.inType);
  Type outType = parseElementType(context, kernel.outType);
  Type fp8Type = parseElementType(context, kernel.fp8Type);
  auto xType = RankedTensorType::get({dyn, dyn, kernel.k}, inType);
  auto wType = RankedTensorType::get({dyn, kernel.n, kernel.k}, fp8Type);
  auto wsType = RankedTensorType::get({perTensor ? 1 : dyn}, b.getF32Type());
  auto yType = RankedTensorType::get({dyn, dyn, kernel.n}, outType);
  SmallVector<Type> inputs = {xType, wType, wsType};
  if (kernel.hasBias)
    inputs.push_back(RankedTensorType::get({dyn, kernel.n}, outType));

  auto func = func::FuncOp::create(b, loc, spec.getBaseName(),
                                   b.getFunctionType(inputs, {yType}));
  Block *body = func.addEntryBlock();
  b.setInsertionPointToEnd(body);
  Value bias = kernel.hasBias ? body->getArgument(3) : Value();
  auto bmm = PrequantBmmOp::create(
      b, loc, yType, body->getArgument(0), body->getArgument(1),
      body->getArgument(2), bias, b.getI64IntegerAttr(kernel.groupSize),
      WeightScaleAttr::get(&context, perTensor ? WeightScale::PerTensor
                                               : WeightScale::PerBatch),
      BatchLayoutAttr::get(&context, BatchLayout::BM),
      BatchLayoutAttr::get(&context, BatchLayout::BM), /*tiles=*/nullptr,
      /*kernels=*/nullptr);
  func::ReturnOp::create(b, loc, bmm.getY());
  return module;
}
