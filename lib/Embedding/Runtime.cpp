//===- Runtime.cpp - bundle loading in plain C++ types --------------------===//

#include "mla-fp8/Embedding/Runtime.h"

#include "mla-fp8/Hardware/Chip.h"
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
