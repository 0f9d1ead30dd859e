//===- MLAFP8Dialect.h - mlafp8 dialect -------------------------*- C++ -*-===//

#ifndef MLAFP8_DIALECT_MLAFP8_IR_MLAFP8DIALECT_H
#define MLAFP8_DIALECT_MLAFP8_IR_MLAFP8DIALECT_H

#include "mlir/IR/Dialect.h"

#include "mla-fp8/Dialect/MLAFP8/IR/MLAFP8Dialect.h.inc"

#endif // MLAFP8_DIALECT_MLAFP8_IR_MLAFP8DIALECT_H
