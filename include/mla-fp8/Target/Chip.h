//===- Chip.h - The chip table, seen from MLIR ------------------*- C++ -*-===//
//
// The chip table itself is MLIR-free (Hardware/Chip.h); this header adds the
// checks that take MLIR types.
//
//===----------------------------------------------------------------------===//

#ifndef MLA_FP8_TARGET_CHIP_H
#define MLA_FP8_TARGET_CHIP_H

#include "mla-fp8/Hardware/Chip.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/Types.h"

namespace mlir::mlafp8 {

/// As checkFP8FormatForChip(const ChipInfo &, StringRef), for an MLIR type.
std::optional<std::string> checkFP8FormatForChip(const ChipInfo &chip,
                                                 Type type);

/// The chip named by a pass's `chip` option, or null after emitting, at
/// `loc`, the error that lists the supported chips.
const ChipInfo *lookupChipOrEmitError(Location loc, StringRef name);

} // namespace mlir::mlafp8

#endif // MLA_FP8_TARGET_CHIP_H
