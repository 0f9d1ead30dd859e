//===- Serialize.cpp - gpu.module to gpu.binary, in-process ---------------===//

#include "mla-fp8/Conversion/Passes.h"

#include "mla-fp8/Dialect/MLAFP8/IR/MLAFP8Dialect.h"
#include "mla-fp8/Dialect/MLAFP8/IR/MLAFP8Ops.h"
#include "mla-fp8/Target/Chip.h"
#include "mla-fp8/Target/Serialization.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/ROCDLDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

namespace mlir::mlafp8 {
#define GEN_PASS_DEF_MLAFP8SERIALIZEPASS
#include "mla-fp8/Conversion/Passes.h.inc"
} // namespace mlir::mlafp8

using namespace mlir;
using namespace mlir::mlafp8;

namespace {
struct SerializePass : mlafp8::impl::MLAFP8SerializePassBase<SerializePass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    const ChipInfo *chipInfo = lookupChipOrEmitError(module.getLoc(), chip);
    if (!chipInfo)
      return signalPassFailure();
    SerializationOptions options;
    options.optLevel = optLevel;
    StringRef extension;
    gpu::CompilationTarget target;
    if (format == "hsaco") {
      options.format = SerializationFormat::CodeObject;
      extension = ".hsaco";
      target = gpu::CompilationTarget::Binary;
    } else if (format == "object") {
      options.format = SerializationFormat::Object;
      extension = ".o";
      target = gpu::CompilationTarget::Binary;
    } else if (format == "isa") {
      options.format = SerializationFormat::Assembly;
      extension = ".s";
      target = gpu::CompilationTarget::Assembly;
    } else {
      emitError(module.getLoc()) << "unknown serialization format '" << format
                                 << "'; expected hsaco, object or isa";
      return signalPassFailure();
    }
    if (optLevel > 3) {
      emitError(module.getLoc())
          << "opt-level must be 0 to 3, got "
          // The option itself would print as a character.
          << static_cast<unsigned>(optLevel);
      return signalPassFailure();
    }

    // An mlafp8 op without kernels was not lowered (convert-mlafp8-to-gpu
    // lowers only mlafp8.prequant_bmm, and records its kernels on it):
    // serializing the rest would succeed with no code object for it.
    bool unlowered = false;
    module.walk([&](Operation *op) {
      if (!isa_and_nonnull<MLAFP8Dialect>(op->getDialect()) ||
          (isa<PrequantBmmOp>(op) && op->hasAttr("kernels")))
        return;
      unlowered = true;
      op->emitError() << "'" << op->getName()
                      << "' was not lowered to a kernel: only "
                         "mlafp8.prequant_bmm is; fuse mlafp8.group_quant "
                         "into its mlafp8.scaled_bmm first "
                         "(mlafp8-fuse-prequant)";
    });
    if (unlowered)
      return signalPassFailure();

    SmallVector<gpu::GPUModuleOp> gpuModules(module.getOps<gpu::GPUModuleOp>());
    bool dumpToDirectory = !dump.empty() && llvm::sys::fs::is_directory(dump);
    if (!dump.empty() && !dumpToDirectory && gpuModules.size() > 1) {
      emitError(module.getLoc())
          << "dump=" << dump
          << " is not an existing directory, so it names one "
             "file, but there are "
          << gpuModules.size() << " gpu.modules; give an existing directory";
      return signalPassFailure();
    }

    initializeAMDGPUTarget();
    auto targetAttr = ROCDL::ROCDLTargetAttr::get(
        &getContext(), /*optLevel=*/optLevel, kAMDGPUTriple, chipInfo->name,
        chipInfo->llvmFeatures);
    for (gpu::GPUModuleOp gpuModule : gpuModules) {
      FailureOr<std::string> bytes =
          serializeGPUModule(gpuModule, *chipInfo, options);
      if (failed(bytes))
        return signalPassFailure();
      if (!dump.empty()) {
        SmallString<256> path(dump);
        if (dumpToDirectory)
          llvm::sys::path::append(path, gpuModule.getName() + extension);
        std::error_code error;
        llvm::raw_fd_ostream out(path, error, llvm::sys::fs::OF_None);
        if (error) {
          gpuModule.emitError()
              << "cannot write " << path << ": " << error.message();
          return signalPassFailure();
        }
        out << *bytes;
        out.close();
        if (out.has_error()) {
          // Cleared, or the stream's destructor would abort the process.
          std::error_code ec = out.error();
          out.clear_error();
          gpuModule.emitError()
              << "cannot write " << path << ": " << ec.message();
          return signalPassFailure();
        }
      }
      OpBuilder builder(gpuModule);
      auto object = gpu::ObjectAttr::get(&getContext(), targetAttr, target,
                                         builder.getStringAttr(*bytes),
                                         /*properties=*/nullptr,
                                         /*kernels=*/nullptr);
      gpu::BinaryOp::create(builder, gpuModule.getLoc(), gpuModule.getName(),
                            /*offloadingHandler=*/nullptr,
                            ArrayRef<Attribute>{object});
      gpuModule.erase();
    }
  }
};
} // namespace
