//===- MLAFP8Attrs.h - mlafp8 attributes ------------------------*- C++ -*-===//

#ifndef MLAFP8_DIALECT_MLAFP8_IR_MLAFP8ATTRS_H
#define MLAFP8_DIALECT_MLAFP8_IR_MLAFP8ATTRS_H

#include "mla-fp8/ABI/KernelABI.h"
#include "mla-fp8/Hardware/Mfma.h"

#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectImplementation.h"

#include "mla-fp8/Dialect/MLAFP8/IR/MLAFP8Enums.h.inc"

namespace mlir::mlafp8 {

/// The most K-groups a kernel keeps in flight, and the one occupancy the
/// generator honours: kernel_abi owns both, so that bundles are checked
/// against the same values.
using kernel_abi::kMaxTileStages;
using kernel_abi::kTileOccupancy;

/// How #mlafp8.tile holds its MFMA: a record of getMfmaLayouts() (one name,
/// because ODS spells the parameter type in a functional cast).
using MfmaRecord = const MfmaLayout *;

/// Parses an MFMA shape name (`m16n16k32`) into its record; fails with a
/// message listing the known shapes.
FailureOr<MfmaRecord> parseMfmaLayout(AsmParser &parser);

} // namespace mlir::mlafp8

#define GET_ATTRDEF_CLASSES
#include "mla-fp8/Dialect/MLAFP8/IR/MLAFP8Attrs.h.inc"

#endif // MLAFP8_DIALECT_MLAFP8_IR_MLAFP8ATTRS_H
