//===- MLAFP8Attrs.h - mlafp8 attributes ------------------------*- C++ -*-===//

#ifndef MLAFP8_DIALECT_MLAFP8_IR_MLAFP8ATTRS_H
#define MLAFP8_DIALECT_MLAFP8_IR_MLAFP8ATTRS_H

#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectImplementation.h"

#include "mla-fp8/Dialect/MLAFP8/IR/MLAFP8Enums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "mla-fp8/Dialect/MLAFP8/IR/MLAFP8Attrs.h.inc"

#endif // MLAFP8_DIALECT_MLAFP8_IR_MLAFP8ATTRS_H
