//===- mla-fp8-opt.cpp - the mla-fp8 lowering driver ----------------------===//
//
// mlir-opt with the mlafp8 dialect, its passes and pipelines, and the upstream
// dialects and passes that the kernel lowering uses.
//
//===----------------------------------------------------------------------===//

#include "mla-fp8/Pipelines/Pipelines.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  mlir::mlafp8::registerMLAFP8PipelineDependencies(registry);
  mlir::mlafp8::registerMLAFP8Passes();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "mla-fp8 lowering driver\n", registry));
}
