//===- MLAFP8Ops.h - mlafp8 operations --------------------------*- C++ -*-===//

#ifndef MLAFP8_DIALECT_MLAFP8_IR_MLAFP8OPS_H
#define MLAFP8_DIALECT_MLAFP8_IR_MLAFP8OPS_H

#include "mla-fp8/Dialect/MLAFP8/IR/MLAFP8Attrs.h"
#include "mla-fp8/Dialect/MLAFP8/IR/MLAFP8Dialect.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#define GET_OP_CLASSES
#include "mla-fp8/Dialect/MLAFP8/IR/MLAFP8Ops.h.inc"

namespace mlir::mlafp8 {
/// The largest finite value of an fp8 element type (240 for f8E4M3FNUZ, 448 for
/// f8E4M3FN), or failure for a type that is not a supported fp8 format.
FailureOr<double> getFP8MaxFinite(Type type);
} // namespace mlir::mlafp8

#endif // MLAFP8_DIALECT_MLAFP8_IR_MLAFP8OPS_H
