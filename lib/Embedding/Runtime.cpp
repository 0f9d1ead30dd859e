//===- Runtime.cpp - bundle loading in plain C++ types --------------------===//

#include "mla-fp8/Embedding/Runtime.h"

#include "mla-fp8/ABI/KernelABI.h"
#include "mla-fp8/CodeObject/File.h"
#include "mla-fp8/CodeObject/Metadata.h"
#include "mla-fp8/Hardware/Chip.h"
#include "mla-fp8/Hardware/Mfma.h"
#include "mla-fp8/Runtime/Bundle.h"

using namespace mlir::mlafp8;

std::shared_ptr<const runtime::LoadedBundle>
embedding::loadBundle(const std::string &dir, std::string &error) {
  llvm::Expected<runtime::LoadedBundle> bundle = runtime::loadBundle(dir);
  if (!bundle) {
    error = llvm::toString(bundle.takeError());
    return nullptr;
  }
  return std::make_shared<const runtime::LoadedBundle>(std::move(*bundle));
}

std::vector<embedding::ChipSummary> embedding::listChips() {
  std::vector<ChipSummary> chips;
  for (const ChipInfo &chip : getSupportedChips()) {
    ChipSummary summary;
    summary.name = chip.name.str();
    summary.marketingNames = chip.marketingNames.str();
    summary.architecture = chip.getArchitectureName().str();
    summary.fp8E4M3Type = chip.fp8E4M3TypeName.str();
    summary.fp8E5M2Type = chip.fp8E5M2TypeName.str();
    summary.waveSize = chip.waveSize;
    summary.ldsBytesPerWorkgroup = chip.ldsBytesPerWorkgroup;
    summary.numCUs = chip.numCUs;
    for (const MfmaLayout *mfma : chip.getMfmas())
      summary.mfmas.push_back(mfma->mnemonic.str());
    chips.push_back(std::move(summary));
  }
  return chips;
}

embedding::LoaderFacts embedding::getLoaderFacts() {
  namespace abi = kernel_abi;
  LoaderFacts facts;
  for (const abi::KernelArg &arg : abi::getKernelArgs())
    facts.args.push_back({arg.name.str(), arg.offset, arg.size,
                          abi::getMetadataValueKind(arg.kind).str()});
  for (const MfmaLayout &mfma : getMfmaLayouts())
    if (!mfma.blockScaled)
      facts.mfmas.push_back(
          {mfma.shapeName.str(), mfma.mnemonic.str(), mfma.m, mfma.n});
  facts.constants = {
      {"KERNARG_BYTES", abi::kKernargBytes},
      {"WAVE_SIZE", abi::kWaveSize},
      {"WORKSPACE_ALIGNMENT", abi::kWorkspaceAlignment},
      {"MAX_TILE_DIM", abi::kMaxTileDim},
      {"MAX_SPLIT_K", abi::kMaxSplitK},
      {"MAX_WAVES", abi::kMaxWaves},
      {"MAX_N", abi::kMaxN},
      {"MIN_GROUP_SIZE", abi::kMinGroupSize},
      {"MAX_TILE_STAGES", abi::kMaxTileStages},
      {"TILE_OCCUPANCY", abi::kTileOccupancy},
      {"SUPPORTED_SCHEMA_VERSION", runtime::kSupportedManifestSchemaVersion},
      {"MAX_MANIFEST_N", runtime::kMaxManifestN},
      {"MAX_MANIFEST_K", runtime::kMaxManifestK},
      {"MAX_MANIFEST_GROUP_SIZE", runtime::kMaxManifestGroupSize},
      {"MAX_MANIFEST_M", runtime::kMaxManifestM},
      {"MAX_MANIFEST_ROWS", runtime::kMaxManifestRows},
      {"MAX_MANIFEST_CHIPS", runtime::kMaxManifestChips},
      {"MAX_MANIFEST_KERNELS_PER_CHIP", runtime::kMaxManifestKernelsPerChip},
      {"MAX_MANIFEST_ARGS", runtime::kMaxManifestArgs},
      {"MAX_MANIFEST_KERNARG_BYTES", runtime::kMaxManifestKernargBytes},
      {"MAX_MANIFEST_LDS_BYTES", runtime::kMaxManifestLdsBytes},
      {"MAX_MANIFEST_SCRATCH_BYTES", runtime::kMaxManifestScratchBytes},
      {"MAX_MANIFEST_JSON_DEPTH", runtime::kMaxManifestJSONDepth},
      {"MAX_MANIFEST_BYTES", int64_t(kMaxManifestBytes)},
      {"MAX_CODE_OBJECT_BYTES", int64_t(kMaxCodeObjectBytes)},
      {"MAX_METADATA_DEPTH", kMaxMetadataDepth},
      {"MAX_METADATA_NOTE_BYTES", int64_t(kMaxMetadataNoteBytes)},
  };
  return facts;
}
