//===- ChipFacts.cpp - Chip facts from Target/Chip.h ----------------------===//

#include "mla-fp8/Dialect/MLAFP8/Transforms/ChipFacts.h"

#include "mla-fp8/Target/Chip.h"

using namespace mlir;
using namespace mlir::mlafp8;

bool ChipFacts::hasFP8Mfma(unsigned m, unsigned n, unsigned k) const {
  const ChipInfo *chip = lookupChip(name);
  return chip && chip->findFP8Mfma(m, n, k) != nullptr;
}

std::optional<ChipFacts> mlir::mlafp8::lookupChipFacts(StringRef name) {
  const ChipInfo *chip = lookupChip(name);
  if (!chip)
    return std::nullopt;
  return ChipFacts{chip->name.str(), chip->ldsBytesPerWorkgroup, chip->numCUs};
}

std::string mlir::mlafp8::describeUnknownChip(StringRef name) {
  return describeUnsupportedChip(name);
}

std::optional<std::string> mlir::mlafp8::checkChipFP8Type(StringRef name,
                                                          Type type) {
  const ChipInfo *chip = lookupChip(name);
  if (!chip)
    return describeUnsupportedChip(name);
  return checkFP8FormatForChip(*chip, type);
}
