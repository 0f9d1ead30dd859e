//===- Passes.h - mlafp8 transformation passes ------------------*- C++ -*-===//

#ifndef MLAFP8_DIALECT_MLAFP8_TRANSFORMS_PASSES_H
#define MLAFP8_DIALECT_MLAFP8_TRANSFORMS_PASSES_H

#include "mla-fp8/Dialect/MLAFP8/IR/MLAFP8Ops.h"
#include "mlir/Pass/Pass.h"

namespace mlir {
class RewritePatternSet;
namespace mlafp8 {

#define GEN_PASS_DECL
#include "mla-fp8/Dialect/MLAFP8/Transforms/Passes.h.inc"

/// Patterns that fuse `group_quant` + `scaled_bmm` into `prequant_bmm`.
void populateFusePrequantPatterns(RewritePatternSet &patterns);

#define GEN_PASS_REGISTRATION
#include "mla-fp8/Dialect/MLAFP8/Transforms/Passes.h.inc"

} // namespace mlafp8
} // namespace mlir

#endif // MLAFP8_DIALECT_MLAFP8_TRANSFORMS_PASSES_H
