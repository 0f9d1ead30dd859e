//===- AOT.cpp - the ahead-of-time generator in plain C++ types -----------===//

#include "mla-fp8/Embedding/Compiler.h"

#include "mla-fp8/AOT/Bundle.h"
#include "mla-fp8/AOT/Compile.h"
#include "mla-fp8/AOT/Presets.h"
#include "mla-fp8/Target/Chip.h"

#include "llvm/Support/WithColor.h"

using namespace mlir;
using namespace mlir::mlafp8;

/// The same resolution of a preset and its overrides as mla-fp8-aot's.
static llvm::Expected<KernelSetOptions>
toKernelSetOptions(const embedding::GenerateOptions &o) {
  KernelSetOptions options;
  const ModelPreset *preset = lookupModelPreset(o.model);
  if (!preset)
    return llvm::createStringError(describeUnknownModel(o.model));
  options.model = o.model;
  options.dims = preset->dims;
  bool custom = false;
  auto override = [&](int64_t value, int64_t &field) {
    if (value > 0) {
      field = value;
      custom = true;
    }
  };
  override(o.heads, options.dims.heads);
  override(o.kvLoraRank, options.dims.kvLoraRank);
  override(o.qkNopeHeadDim, options.dims.qkNopeHeadDim);
  override(o.vHeadDim, options.dims.vHeadDim);
  if (custom)
    options.model = o.model + "-custom";
  if (!o.tp.empty()) {
    options.tp = o.tp;
    options.tpExplicit = true;
  }
  if (!o.chips.empty())
    options.chips = o.chips;
  options.maxM = o.maxM;
  std::optional<kernel_abi::WeightScaleMode> ws =
      kernel_abi::parseWeightScaleMode(o.weightScale);
  if (!ws)
    return llvm::createStringError(
        "weight_scale must be 'per_tensor' or 'per_batch', got '" +
        o.weightScale + "'");
  options.weightScale = *ws;
  if (o.outType != "bf16" && o.outType != "f16")
    return llvm::createStringError("out_type must be 'bf16' or 'f16', got '" +
                                   o.outType + "'");
  options.outType = o.outType;
  options.groupSize = o.groupSize;
  options.bias = o.bias;
  return options;
}

embedding::GenerateResult embedding::generateBundle(const GenerateOptions &o) {
  GenerateResult result;
  llvm::Expected<KernelSetOptions> kernels = toKernelSetOptions(o);
  if (!kernels) {
    result.error = llvm::toString(kernels.takeError());
    return result;
  }
  BundleOptions options;
  options.kernels = std::move(*kernels);
  options.outputDir = o.outputDir;
  options.force = o.force;
  options.cacheDir = o.cacheDir;
  options.jobs = o.jobs;
  // As mla-fp8-aot does: a damaged cache entry or an unwritable cache is a
  // warning on stderr, and the run goes on.
  options.onWarning = [](llvm::StringRef message) {
    llvm::WithColor::warning(llvm::errs(), "mla-fp8") << message << "\n";
  };
  llvm::Expected<BundleResult> bundle = mlafp8::generateBundle(options);
  if (!bundle) {
    result.error = llvm::toString(bundle.takeError());
    return result;
  }
  result.ok = true;
  result.manifest = std::move(bundle->manifest);
  result.bytesWritten = bundle->bytesWritten;
  for (const ChipBundle &chip : bundle->chips) {
    GeneratedChip &c = result.chips.emplace_back();
    c.chip = chip.chip;
    c.codeObjectBytes = chip.codeObject.size();
    c.sha256 = chip.contentHash;
    c.fromCache = chip.fromCache;
    for (const BundleKernel &k : chip.kernels)
      c.symbols.push_back(k.symbol);
  }
  return result;
}

embedding::CompileSpecResult
embedding::compileSpec(const CompileSpecOptions &o) {
  CompileSpecResult result;
  const ChipInfo *chip = lookupChip(o.chip);
  if (!chip) {
    result.error = describeUnsupportedChip(o.chip);
    return result;
  }
  std::optional<kernel_abi::WeightScaleMode> ws =
      kernel_abi::parseWeightScaleMode(o.weightScale);
  if (!ws) {
    result.error = "weight_scale must be 'per_tensor' or 'per_batch', got '" +
                   o.weightScale + "'";
    return result;
  }
  KernelGroupSpec spec;
  spec.projection = o.projection;
  spec.batches = o.batches;
  spec.kernel.chip = o.chip;
  spec.kernel.n = o.n;
  spec.kernel.k = o.k;
  spec.kernel.fp8Type = chip->fp8E4M3TypeName.str();
  spec.kernel.outType = o.outType;
  spec.kernel.weightScale = *ws;
  spec.kernel.groupSize = o.groupSize;
  spec.maxM = o.maxM;
  llvm::Expected<CompiledCodeObject> compiled =
      compileKernelGroupToCodeObject(spec, o.withIsa);
  if (!compiled) {
    result.error = llvm::toString(compiled.takeError());
    return result;
  }
  result.ok = true;
  result.codeObject = std::move(compiled->codeObject);
  result.isa = std::move(compiled->isa);
  for (const auto &[symbol, tile] : compiled->kernels) {
    CompiledKernel &k = result.kernels.emplace_back();
    k.symbol = symbol;
    k.minM = tile.minM;
    k.maxM = tile.maxM;
    k.blockM = tile.blockM;
    k.blockN = tile.blockN;
    k.waves = tile.waves;
    k.splitK = tile.splitK;
    k.stages = tile.stages;
    k.occupancy = tile.occupancy;
    k.mfma = stringifyMfmaShape(tile.mfma).str();
    if (const KernelMetadata *md = compiled->metadata.findKernel(symbol)) {
      k.kernargSize = md->kernargSegmentSize;
      k.ldsBytes = md->groupSegmentFixedSize;
      k.scratchBytes = md->privateSegmentFixedSize;
      k.vgprs = md->vgprCount;
      k.agprs = md->agprCount;
      k.sgprs = md->sgprCount;
      k.vgprSpills = md->vgprSpillCount;
      k.sgprSpills = md->sgprSpillCount;
      k.wavefrontSize = md->wavefrontSize;
      k.maxWorkgroupSize = md->maxFlatWorkgroupSize;
    }
  }
  result.targetId = compiled->metadata.targetID;
  result.codeObjectVersion = compiled->metadata.codeObjectVersion;
  return result;
}

uint64_t embedding::compiledGroupCount() { return getCompiledGroupCount(); }
