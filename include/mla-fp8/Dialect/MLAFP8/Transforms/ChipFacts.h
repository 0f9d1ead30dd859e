//===- ChipFacts.h - The chip facts the kernel generator uses ---*- C++ -*-===//
//
// A narrow view of Target/Chip.h for code that also includes the mlafp8
// dialect: Chip.h's `struct MfmaShape` and the dialect's `enum MfmaShape` share
// a name in mlir::mlafp8, so no translation unit can include both. This header
// copies out the few facts needed; ChipFacts.cpp is the only file that reads
// Chip.h.
//
//===----------------------------------------------------------------------===//

#ifndef MLAFP8_DIALECT_MLAFP8_TRANSFORMS_CHIPFACTS_H
#define MLAFP8_DIALECT_MLAFP8_TRANSFORMS_CHIPFACTS_H

#include "mlir/IR/Types.h"
#include "mlir/Support/LLVM.h"

#include <optional>
#include <string>

namespace mlir::mlafp8 {

struct ChipFacts {
  /// e.g. "gfx942".
  std::string name;
  /// LDS one workgroup may allocate, in bytes.
  int64_t ldsBytesPerWorkgroup;
  /// Compute units of the full product.
  int64_t numCUs;
  /// Whether the chip has the non-scaled fp8 MFMA of this shape.
  bool hasFP8Mfma(unsigned m, unsigned n, unsigned k) const;
};

/// The facts of chip `name`, or std::nullopt if it is not supported.
std::optional<ChipFacts> lookupChipFacts(StringRef name);

/// "unknown chip 'x'; supported chips: ..." (Target/Chip.h's wording).
std::string describeUnknownChip(StringRef name);

/// std::nullopt if the chip computes with fp8 type `type`, else a message
/// naming the format the chip needs.
std::optional<std::string> checkChipFP8Type(StringRef chip, Type type);

} // namespace mlir::mlafp8

#endif // MLAFP8_DIALECT_MLAFP8_TRANSFORMS_CHIPFACTS_H
