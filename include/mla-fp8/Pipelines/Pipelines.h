//===- Pipelines.h - mla-fp8 pass pipelines ---------------------*- C++ -*-===//
//
// The registered pipelines, in C++ so that mla-fp8-opt, the AOT generator and
// the Python bindings run the same passes.
//
//===----------------------------------------------------------------------===//

#ifndef MLAFP8_PIPELINES_PIPELINES_H
#define MLAFP8_PIPELINES_PIPELINES_H

#include "mlir/Pass/PassOptions.h"

#include <string>

namespace mlir {
class DialectRegistry;
class OpPassManager;
namespace mlafp8 {

/// Registers what the pipelines need in a context: the mlafp8 dialect, the
/// upstream dialects the kernels are built from and lowered to, their
/// conversion-to-LLVM interfaces (convert-gpu-to-rocdl finds its patterns
/// through them), the ROCDL target attribute and the LLVM IR translations.
void registerMLAFP8PipelineDependencies(DialectRegistry &registry);

/// Options of `mlafp8-to-hsaco`.
struct MLAFP8ToHsacoPipelineOptions
    : public PassPipelineOptions<MLAFP8ToHsacoPipelineOptions> {
  PassOptions::Option<std::string> chip{
      *this, "chip",
      llvm::cl::desc("the target chip, a row of the chip table "
                     "(lib/Hardware/Chip.cpp), e.g. gfx942"),
      llvm::cl::init("gfx942")};
  PassOptions::Option<std::string> format{
      *this, "format",
      llvm::cl::desc("what the gpu.binary holds: hsaco (code object), object "
                     "(relocatable) or isa (assembly text)"),
      llvm::cl::init("hsaco")};
  PassOptions::Option<unsigned> optLevel{
      *this, "opt-level", llvm::cl::desc("LLVM optimization level (0 to 3)"),
      llvm::cl::init(3)};
  PassOptions::Option<std::string> dump{
      *this, "dump",
      llvm::cl::desc("also write each binary to this directory (or file)"),
      llvm::cl::init("")};
};

/// prequant_bmm on tensors -> gpu.binary per function:
/// mlafp8-select-tiles, convert-mlafp8-to-gpu, then on each gpu.module
/// canonicalize/cse, convert-scf-to-cf, expand-strided-metadata, lower-affine,
/// convert-gpu-to-rocdl (chipset, 64-bit index, bare pointers; includes the
/// amdgpu/arith/vector/memref/math to LLVM/ROCDL patterns),
/// reconcile-unrealized-casts, canonicalize/cse, and mlafp8-serialize.
void populateMLAFP8ToHsacoPipeline(OpPassManager &pm,
                                   const MLAFP8ToHsacoPipelineOptions &options);

/// The same without serialization: stops at gpu.modules in the LLVM and ROCDL
/// dialects (what `mlafp8-serialize` consumes).
void populateMLAFP8ToROCDLPipeline(OpPassManager &pm,
                                   const MLAFP8ToHsacoPipelineOptions &options);

/// Registers `mlafp8-to-hsaco` and `mlafp8-to-rocdl`.
void registerMLAFP8Pipelines();

/// Registers every pass a tool working on mla-fp8 IR offers: the project's
/// passes and pipelines, and the upstream passes the lowering is built from
/// (transforms, conversions, GPU, memref). mla-fp8-opt and the embedding API
/// share it, so both accept the same pipelines.
void registerMLAFP8Passes();

} // namespace mlafp8
} // namespace mlir

#endif // MLAFP8_PIPELINES_PIPELINES_H
