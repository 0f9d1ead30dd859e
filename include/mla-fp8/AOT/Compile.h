//===- Compile.h - compile one kernel group ---------------------*- C++ -*-===//
//
// From a KernelGroupSpec to LLVM IR for its chip: the mlafp8 pipeline up to the
// LLVM dialect, then the translation. Code generation happens per chip, on the
// linked module of all groups (Bundle.h), or here for a single group.
//
//===----------------------------------------------------------------------===//

#ifndef MLA_FP8_AOT_COMPILE_H
#define MLA_FP8_AOT_COMPILE_H

#include "mla-fp8/AOT/Bundle.h"

#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"

#include <memory>

namespace mlir::mlafp8 {

/// A kernel group lowered to LLVM IR.
struct CompiledGroup {
  std::unique_ptr<llvm::Module> module;
  /// The kernels the module defines, with the range of rows and tile of each.
  std::vector<std::pair<std::string, TileConfig>> kernels;
};

/// Runs the mlafp8 lowering on the group's module and translates the
/// resulting gpu.module to LLVM IR in `llvmContext`. Diagnostics are returned
/// in the error.
llvm::Expected<CompiledGroup>
compileKernelGroup(const KernelGroupSpec &spec, llvm::LLVMContext &llvmContext);

/// How many kernel groups this process has lowered: lets embedders and tests
/// prove that a path never compiles.
uint64_t getCompiledGroupCount();

/// A code object of one group, with its ISA text and metadata: what an
/// embedder compiling a single spec asks for.
struct CompiledCodeObject {
  std::string codeObject;
  std::string isa;
  CodeObjectMetadata metadata;
  std::vector<std::pair<std::string, TileConfig>> kernels;
};
llvm::Expected<CompiledCodeObject>
compileKernelGroupToCodeObject(const KernelGroupSpec &spec,
                               bool withIsa = true);

} // namespace mlir::mlafp8

#endif // MLA_FP8_AOT_COMPILE_H
