//===- Passes.h - mlafp8 conversion passes ----------------------*- C++ -*-===//

#ifndef MLAFP8_CONVERSION_PASSES_H
#define MLAFP8_CONVERSION_PASSES_H

#include "mlir/Pass/Pass.h"

namespace mlir::mlafp8 {

#define GEN_PASS_DECL
#include "mla-fp8/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "mla-fp8/Conversion/Passes.h.inc"

} // namespace mlir::mlafp8

#endif // MLAFP8_CONVERSION_PASSES_H
