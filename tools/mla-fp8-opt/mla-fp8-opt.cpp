//===- mla-fp8-opt.cpp - the mla-fp8 lowering driver ----------------------===//
//
// mlir-opt with the mlafp8 dialect, its passes and pipelines, and the upstream
// dialects and passes that the kernel lowering uses.
//
//===----------------------------------------------------------------------===//

#include "mla-fp8/Conversion/Passes.h"
#include "mla-fp8/Dialect/MLAFP8/IR/MLAFP8Dialect.h"
#include "mla-fp8/Dialect/MLAFP8/Transforms/Passes.h"
#include "mla-fp8/Pipelines/Pipelines.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  mlir::mlafp8::registerMLAFP8PipelineDependencies(registry);
  mlir::registerTransformsPasses();
  mlir::registerConversionPasses();
  mlir::registerGPUPasses();
  mlir::memref::registerMemRefPasses();
  mlir::mlafp8::registerMLAFP8TransformsPasses();
  mlir::mlafp8::registerMLAFP8ConversionPasses();
  mlir::mlafp8::registerMLAFP8Pipelines();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "mla-fp8 lowering driver\n", registry));
}
