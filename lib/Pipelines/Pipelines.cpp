//===- Pipelines.cpp - mla-fp8 pass pipelines -----------------------------===//

#include "mla-fp8/Pipelines/Pipelines.h"

#include "mla-fp8/Conversion/Passes.h"
#include "mla-fp8/Dialect/MLAFP8/Transforms/Passes.h"

#include "mla-fp8/Dialect/MLAFP8/IR/MLAFP8Dialect.h"
#include "mla-fp8/Target/Serialization.h"

#include "mlir/Conversion/AffineToStandard/AffineToStandard.h"
#include "mlir/Conversion/GPUToROCDL/GPUToROCDLPass.h"
#include "mlir/Conversion/Passes.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Dialect/AMDGPU/IR/AMDGPUDialect.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/ROCDLDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVM/ROCDL/Target.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;
using namespace mlir::mlafp8;

void mlir::mlafp8::registerMLAFP8PipelineDependencies(
    DialectRegistry &registry) {
  registry
      .insert<MLAFP8Dialect, affine::AffineDialect, amdgpu::AMDGPUDialect,
              arith::ArithDialect, cf::ControlFlowDialect, func::FuncDialect,
              gpu::GPUDialect, LLVM::LLVMDialect, math::MathDialect,
              memref::MemRefDialect, ROCDL::ROCDLDialect, scf::SCFDialect,
              tensor::TensorDialect, vector::VectorDialect>();
  registerAllExtensions(registry);
  ROCDL::registerROCDLTargetInterfaceExternalModels(registry);
  registerGPUModuleTranslations(registry);
}

void mlir::mlafp8::populateMLAFP8ToROCDLPipeline(
    OpPassManager &pm, const MLAFP8ToHsacoPipelineOptions &options) {
  pm.addPass(createMLAFP8SelectTilesPass({options.chip}));
  pm.addPass(createConvertMLAFP8ToGPUPass({options.chip}));

  OpPassManager &kernels = pm.nest<gpu::GPUModuleOp>();
  kernels.addPass(createCanonicalizerPass());
  kernels.addPass(createCSEPass());
  kernels.addPass(createSCFToControlFlowPass());
  kernels.addPass(memref::createExpandStridedMetadataPass());
  kernels.addPass(createLowerAffinePass());
  ConvertGpuOpsToROCDLOpsOptions rocdl;
  rocdl.chipset = options.chip;
  rocdl.indexBitwidth = 64;
  rocdl.useBarePtrCallConv = true;
  kernels.addPass(createConvertGpuOpsToROCDLOps(rocdl));
  pm.addPass(createReconcileUnrealizedCastsPass());
  OpPassManager &cleanup = pm.nest<gpu::GPUModuleOp>();
  cleanup.addPass(createCanonicalizerPass());
  cleanup.addPass(createCSEPass());
}

void mlir::mlafp8::populateMLAFP8ToHsacoPipeline(
    OpPassManager &pm, const MLAFP8ToHsacoPipelineOptions &options) {
  populateMLAFP8ToROCDLPipeline(pm, options);
  MLAFP8SerializePassOptions serialize;
  serialize.chip = options.chip;
  serialize.format = options.format;
  serialize.optLevel = options.optLevel;
  serialize.dump = options.dump;
  pm.addPass(createMLAFP8SerializePass(serialize));
}

void mlir::mlafp8::registerMLAFP8Pipelines() {
  PassPipelineRegistration<MLAFP8ToHsacoPipelineOptions>(
      "mlafp8-to-hsaco",
      "Lower mlafp8.prequant_bmm to AMDGPU code objects (gpu.binary) for one "
      "chip, in-process",
      populateMLAFP8ToHsacoPipeline);
  PassPipelineRegistration<MLAFP8ToHsacoPipelineOptions>(
      "mlafp8-to-rocdl",
      "Lower mlafp8.prequant_bmm to gpu.modules in the LLVM and ROCDL "
      "dialects (mlafp8-to-hsaco without serialization)",
      populateMLAFP8ToROCDLPipeline);
}

void mlir::mlafp8::registerMLAFP8Passes() {
  registerTransformsPasses();
  registerConversionPasses();
  registerGPUPasses();
  memref::registerMemRefPasses();
  registerMLAFP8TransformsPasses();
  registerMLAFP8ConversionPasses();
  registerMLAFP8Pipelines();
}
