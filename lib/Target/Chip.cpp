//===- Chip.cpp - The chip checks that take MLIR types --------------------===//

#include "mla-fp8/Target/Chip.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::mlafp8;

std::optional<std::string>
mlir::mlafp8::checkFP8FormatForChip(const ChipInfo &chip, Type type) {
  std::string name;
  llvm::raw_string_ostream os(name);
  type.print(os);
  return checkFP8FormatForChip(chip, StringRef(name));
}

const ChipInfo *mlir::mlafp8::lookupChipOrEmitError(Location loc,
                                                    StringRef name) {
  const ChipInfo *chip = lookupChip(name);
  if (!chip)
    emitError(loc) << describeUnsupportedChip(name);
  return chip;
}
