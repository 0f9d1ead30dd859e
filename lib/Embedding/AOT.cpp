//===- AOT.cpp - the ahead-of-time generator in plain C++ types -----------===//

#include "mla-fp8/Embedding/Compiler.h"

#include "mla-fp8/AOT/Bundle.h"
#include "mla-fp8/AOT/Compile.h"
#include "mla-fp8/AOT/Options.h"
#include "mla-fp8/Target/Chip.h"

#include "llvm/Support/WithColor.h"

using namespace mlir;
using namespace mlir::mlafp8;

embedding::GenerateResult embedding::generateBundle(const GenerateOptions &o) {
  GenerateResult result;
  llvm::Expected<KernelSetOptions> kernels = resolveKernelSetOptions(o.kernels);
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
  // The same bounds and messages as mla-fp8-aot's options.
  if (llvm::Error error = checkKernelDescription(o.kernel, o.maxM)) {
    result.error = llvm::toString(std::move(error));
    return result;
  }
  if (llvm::Error error = checkCodeObjectVersion(o.codeObjectVersion)) {
    result.error = llvm::toString(std::move(error));
    return result;
  }
  const ChipInfo *chip = lookupChip(o.kernel.chip);
  KernelGroupSpec spec;
  spec.projection = o.projection;
  spec.batches = o.batches;
  spec.kernel = o.kernel;
  if (spec.kernel.fp8Type.empty())
    spec.kernel.fp8Type = chip->fp8E4M3TypeName.str();
  spec.maxM = o.maxM;
  spec.codeObjectVersion = unsigned(o.codeObjectVersion);
  result.kernel = spec.kernel;
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
    k.minRows = tile.minRows;
    k.maxRows = tile.maxRows;
    k.blockM = tile.blockM;
    k.blockN = tile.blockN;
    k.waves = tile.waves;
    k.splitK = tile.splitK;
    k.stages = tile.stages;
    k.occupancy = tile.occupancy;
    k.mfma = tile.mfma->shapeName.str();
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
