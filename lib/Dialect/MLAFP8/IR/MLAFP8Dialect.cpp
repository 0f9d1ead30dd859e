//===- MLAFP8Dialect.cpp - mlafp8 dialect ---------------------------------===//

#include "mla-fp8/Dialect/MLAFP8/IR/MLAFP8Dialect.h"
#include "mla-fp8/Dialect/MLAFP8/IR/MLAFP8Attrs.h"
#include "mla-fp8/Dialect/MLAFP8/IR/MLAFP8Ops.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::mlafp8;

#include "mla-fp8/Dialect/MLAFP8/IR/MLAFP8Dialect.cpp.inc"

void MLAFP8Dialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "mla-fp8/Dialect/MLAFP8/IR/MLAFP8Ops.cpp.inc"
      >();
  registerAttributes();
}
