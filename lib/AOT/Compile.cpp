//===- Compile.cpp - compile one kernel group -----------------------------===//

#include "mla-fp8/AOT/Compile.h"

#include "mla-fp8/Dialect/MLAFP8/IR/MLAFP8Ops.h"
#include "mla-fp8/Dialect/MLAFP8/Transforms/Passes.h"
#include "mla-fp8/Pipelines/Pipelines.h"
#include "mla-fp8/Target/Chip.h"
#include "mla-fp8/Target/Serialization.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/raw_ostream.h"

#include <atomic>

using namespace mlir;
using namespace mlir::mlafp8;

static llvm::Error makeError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// Sets `bmm`'s tiles through the tile attribute's verifier: explicit tiles
/// (KernelGroupSpec::tiles) come from outside the table.
static llvm::Error setCheckedTiles(PrequantBmmOp bmm,
                                   llvm::ArrayRef<TileConfig> tiles,
                                   const KernelGroupSpec &spec,
                                   const std::string &diagnostics) {
  MLIRContext *context = bmm.getContext();
  SmallVector<Attribute> tileAttrs;
  for (const TileConfig &tile : tiles) {
    TileAttr attr = TileAttr::getChecked(
        [&] { return bmm.emitError(); }, context, tile.minRows, tile.maxRows,
        tile.blockM, tile.blockN, tile.waves, tile.mfma, tile.splitK,
        tile.stages, tile.occupancy);
    if (!attr)
      return makeError("invalid tile for " + spec.getBaseName() + ": " +
                       diagnostics);
    tileAttrs.push_back(attr);
  }
  bmm.setTilesAttr(ArrayAttr::get(context, tileAttrs));
  return llvm::Error::success();
}

llvm::Error mlir::mlafp8::verifyExplicitTiles(const KernelGroupSpec &spec) {
  if (spec.tiles.empty())
    return llvm::Error::success();
  MLIRContext context(MLIRContext::Threading::DISABLED);
  std::string diagnostics;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
    appendDiagnostic(diagnostics, diag);
    return success();
  });
  OwningOpRef<ModuleOp> module = buildKernelGroupModule(context, spec);
  PrequantBmmOp bmm;
  module->walk([&](PrequantBmmOp op) { bmm = op; });
  if (llvm::Error error = setCheckedTiles(bmm, spec.tiles, spec, diagnostics))
    return error;
  // The op's own verifier checks the tiles against the shape (split-K
  // against the K-groups).
  if (failed(mlir::verify(*module)))
    return makeError("invalid tile for " + spec.getBaseName() + ": " +
                     diagnostics);
  return llvm::Error::success();
}

/// Runs the mlafp8 lowering on `module` up to gpu.modules in the LLVM and
/// ROCDL dialects, with the group's ranges of rows, and returns the kernels.
static llvm::Expected<std::vector<std::pair<std::string, TileConfig>>>
lowerGroup(ModuleOp module, const KernelGroupSpec &spec,
           std::string &diagnostics) {
  MLIRContext *context = module.getContext();
  PrequantBmmOp bmm;
  module.walk([&](PrequantBmmOp op) { bmm = op; });
  if (!bmm)
    return makeError("kernel module holds no mlafp8.prequant_bmm");

  llvm::Expected<SmallVector<TileConfig>> planned = getGroupTiles(spec);
  if (!planned)
    return planned.takeError();
  SmallVector<TileConfig> &tiles = *planned;
  if (llvm::Error error = setCheckedTiles(bmm, tiles, spec, diagnostics))
    return std::move(error);

  PassManager pm(context);
  MLAFP8ToHsacoPipelineOptions options;
  options.chip = spec.kernel.chip;
  populateMLAFP8ToROCDLPipeline(pm, options);
  if (failed(pm.run(module)))
    return makeError("lowering " + spec.getBaseName() + " failed: " +
                     diagnostics);

  ArrayAttr kernels = bmm.getKernelsAttr();
  if (!kernels || kernels.size() != tiles.size())
    return makeError("lowering " + spec.getBaseName() +
                     " did not record one kernel per tile");
  std::vector<std::pair<std::string, TileConfig>> result;
  for (auto [ref, tile] : llvm::zip(kernels, tiles))
    result.emplace_back(
        cast<SymbolRefAttr>(ref).getLeafReference().getValue().str(), tile);
  return result;
}

static std::atomic<uint64_t> compiledGroups{0};

uint64_t mlir::mlafp8::getCompiledGroupCount() { return compiledGroups; }

llvm::Expected<CompiledGroup>
mlir::mlafp8::compileKernelGroup(const KernelGroupSpec &spec,
                                 llvm::LLVMContext &llvmContext) {
  ++compiledGroups;
  DialectRegistry registry;
  registerMLAFP8PipelineDependencies(registry);
  MLIRContext context(registry, MLIRContext::Threading::DISABLED);
  std::string diagnostics;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
    appendDiagnostic(diagnostics, diag);
    return success();
  });

  OwningOpRef<ModuleOp> module = buildKernelGroupModule(context, spec);
  llvm::Expected<std::vector<std::pair<std::string, TileConfig>>> kernels =
      lowerGroup(*module, spec, diagnostics);
  if (!kernels)
    return kernels.takeError();

  gpu::GPUModuleOp gpuModule;
  module->walk([&](gpu::GPUModuleOp op) { gpuModule = op; });
  if (!gpuModule)
    return makeError("lowering " + spec.getBaseName() +
                     " produced no gpu.module");
  FailureOr<std::unique_ptr<llvm::Module>> llvmModule =
      translateGPUModuleToLLVMIR(gpuModule, llvmContext,
                                 spec.codeObjectVersion);
  if (failed(llvmModule))
    return makeError("translating " + spec.getBaseName() +
                     " to LLVM IR failed: " + diagnostics);
  return CompiledGroup{std::move(*llvmModule), std::move(*kernels)};
}

llvm::Expected<CompiledCodeObject>
mlir::mlafp8::compileKernelGroupToCodeObject(const KernelGroupSpec &spec,
                                             bool withIsa) {
  const ChipInfo *chip = lookupChip(spec.kernel.chip);
  if (!chip)
    return makeError(describeUnsupportedChip(spec.kernel.chip));
  initializeAMDGPUTarget();
  llvm::LLVMContext llvmContext;
  llvm::Expected<CompiledGroup> group = compileKernelGroup(spec, llvmContext);
  if (!group)
    return group.takeError();
  CompiledCodeObject result;
  result.kernels = std::move(group->kernels);
  if (withIsa) {
    llvm::Expected<std::string> isa = emitAssembly(*group->module, *chip);
    if (!isa)
      return isa.takeError();
    result.isa = std::move(*isa);
  }
  llvm::Expected<std::string> object = emitObject(*group->module, *chip);
  if (!object)
    return object.takeError();
  llvm::Expected<std::string> codeObject = linkCodeObject(*object);
  if (!codeObject)
    return codeObject.takeError();
  result.codeObject = std::move(*codeObject);
  llvm::Expected<CodeObjectMetadata> metadata =
      readCodeObjectMetadata(result.codeObject);
  if (!metadata)
    return metadata.takeError();
  result.metadata = std::move(*metadata);
  return result;
}
