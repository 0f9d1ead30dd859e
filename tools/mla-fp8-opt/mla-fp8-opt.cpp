//===- mla-fp8-opt.cpp - the mla-fp8 lowering driver ----------------------===//
//
// mlir-opt with the mlafp8 dialect, its passes and pipelines, and the upstream
// dialects and passes that the kernel lowering uses.
//
//===----------------------------------------------------------------------===//

#include "mla-fp8/Dialect/MLAFP8/IR/MLAFP8Dialect.h"
#include "mla-fp8/Dialect/MLAFP8/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  registry.insert<mlir::mlafp8::MLAFP8Dialect, mlir::func::FuncDialect,
                  mlir::arith::ArithDialect, mlir::tensor::TensorDialect>();
  mlir::registerTransformsPasses();
  mlir::mlafp8::registerMLAFP8TransformsPasses();
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "mla-fp8 lowering driver\n", registry));
}
