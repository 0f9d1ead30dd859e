//===- MLAFP8ToGPU.cpp - prequant_bmm to gpu.func kernels -----------------===//
//
// The pass: one gpu.module per prequant_bmm, one kernel per tile, and the
// op's `kernels` attribute that tells launchers which kernel serves which M
// range. The plan is KernelPlan.cpp, the kernel KernelBuilder.cpp.
//
//===----------------------------------------------------------------------===//

#include "mla-fp8/Conversion/Passes.h"

#include "KernelEmitter.h"

#include "mla-fp8/Target/Chip.h"

#include "mlir/Dialect/AMDGPU/IR/AMDGPUDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

namespace mlir::mlafp8 {
#define GEN_PASS_DEF_CONVERTMLAFP8TOGPUPASS
#include "mla-fp8/Conversion/Passes.h.inc"
} // namespace mlir::mlafp8

using namespace mlir;
using namespace mlir::mlafp8;

namespace {
struct ConvertMLAFP8ToGPUPass
    : mlafp8::impl::ConvertMLAFP8ToGPUPassBase<ConvertMLAFP8ToGPUPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    const ChipInfo *chipInfo = lookupChipOrEmitError(module.getLoc(), chip);
    if (!chipInfo)
      return signalPassFailure();
    SmallVector<PrequantBmmOp> ops;
    module.walk([&](PrequantBmmOp op) { ops.push_back(op); });
    if (ops.empty())
      return;
    SymbolTable symbols(module);
    for (PrequantBmmOp op : ops)
      if (failed(convert(op, *chipInfo, symbols)))
        return signalPassFailure();
    module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                    UnitAttr::get(module.getContext()));
  }

  LogicalResult convert(PrequantBmmOp op, const ChipInfo &chipInfo,
                        SymbolTable &symbols) {
    if (std::optional<std::string> message = checkFP8FormatForChip(
            chipInfo, op.getW().getType().getElementType()))
      return op.emitOpError() << *message;
    std::optional<ArrayAttr> tiles = op.getTiles();
    if (!tiles)
      return op.emitOpError(
          "has no tiles; run mlafp8-select-tiles before convert-mlafp8-to-gpu");

    std::string base = "mlafp8";
    if (auto func = op->getParentOfType<FunctionOpInterface>())
      base = func.getName().str();
    OpBuilder builder(op.getContext());
    builder.setInsertionPointToEnd(getOperation().getBody());
    auto gpuModule =
        gpu::GPUModuleOp::create(builder, op.getLoc(), base + "_kernels");
    symbols.insert(gpuModule);

    kernel_abi::KernelNameFields nameFields;
    nameFields.n = op.getN();
    nameFields.k = op.getK();
    nameFields.groupSize = static_cast<int64_t>(op.getGroupSize());
    nameFields.inType =
        op.getX().getType().getElementType().isBF16() ? "bf16" : "f16";
    nameFields.outType =
        op.getY().getType().getElementType().isBF16() ? "bf16" : "f16";
    nameFields.perBatchScale = op.getWScaleMode() == WeightScale::PerBatch;
    nameFields.hasBias = static_cast<bool>(op.getBias());
    nameFields.chip = chipInfo.name.str();
    SmallVector<Attribute> kernels;
    for (auto [index, attr] : llvm::enumerate(*tiles)) {
      auto tile = cast<TileAttr>(attr);
      llvm::Expected<KernelPlan> plan = planKernel(op, chipInfo, tile);
      if (!plan)
        return op.emitOpError()
               << "tile " << index << ": " << llvm::toString(plan.takeError());
      nameFields.minRows = tile.getMinRows();
      nameFields.maxRows = tile.getMaxRows();
      std::string name = kernel_abi::getKernelSymbol(nameFields);
      gpu::GPUFuncOp func = buildKernel(gpuModule, op.getLoc(), name, *plan);
      kernels.push_back(
          SymbolRefAttr::get(gpuModule.getSymNameAttr(),
                             {FlatSymbolRefAttr::get(func.getNameAttr())}));
    }
    op.setKernelsAttr(ArrayAttr::get(op.getContext(), kernels));
    return success();
  }
};
} // namespace
