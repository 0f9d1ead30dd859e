//===- Translations.cpp - LLVM IR translations the pipelines need ---------===//
//
// Separate from Pipelines.cpp because Target/Chip.h (through Serialization.h)
// and the mlafp8 dialect headers cannot share a translation unit (both declare
// mlir::mlafp8::MfmaShape).
//
//===----------------------------------------------------------------------===//

#include "mla-fp8/Target/Serialization.h"

namespace mlir::mlafp8 {
void registerPipelineTranslations(DialectRegistry &registry);
} // namespace mlir::mlafp8

void mlir::mlafp8::registerPipelineTranslations(DialectRegistry &registry) {
  registerGPUModuleTranslations(registry);
}
