//===- Serialization.h - In-process AMDGPU code-object emission -*- C++ -*-===//
//
// Turns a gpu.module in the LLVM + ROCDL dialects into a loadable code object
// (.hsaco) without ROCm and without a linker executable: LLVM's AMDGPU target
// emits the relocatable object and the lld library links it, both in-process.
//
//===----------------------------------------------------------------------===//

#ifndef MLA_FP8_TARGET_SERIALIZATION_H
#define MLA_FP8_TARGET_SERIALIZATION_H

#include "mla-fp8/Target/Chip.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Support/LLVM.h"
#include "llvm/Support/Error.h"

#include <memory>
#include <string>

namespace llvm {
class LLVMContext;
class Module;
class Target;
class TargetMachine;
} // namespace llvm

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace mlir::mlafp8 {

/// The code-object version this project emits unless told otherwise: v5
/// (ELF ABI version 3), which ROCm loads from 6.0 on; v6 (ABI version 4) is
/// loaded only from ROCm 6.3 on, and the kernels use nothing v6 adds. LLVM
/// 22 defaults to v6, so the serializer always sets the module flag
/// "amdhsa_code_object_version" (version * 100) explicitly.
inline constexpr unsigned kDefaultCodeObjectVersion = 5;

/// What `serializeGPUModule` produces.
enum class SerializationFormat {
  /// AMDGPU assembly text (.s).
  Assembly,
  /// A relocatable ELF object (.o).
  Object,
  /// A linked, loadable code object (.hsaco, ELF shared object).
  CodeObject,
};

/// Options shared by the serialization entry points.
struct SerializationOptions {
  /// LLVM optimization level, 0 to 3, for the IR pipeline and codegen.
  unsigned optLevel = 3;
  /// Code-object version, 5 or 6.
  unsigned codeObjectVersion = kDefaultCodeObjectVersion;
  /// What to produce.
  SerializationFormat format = SerializationFormat::CodeObject;
};

/// Initializes LLVM's AMDGPU target (info, MC, codegen, asm printer and
/// parser, disassembler) once per process; only this target, not all.
void initializeAMDGPUTarget();

/// Initializes the AMDGPU target and returns it, for the triple
/// kAMDGPUTriple.
llvm::Expected<const llvm::Target *> getAMDGPUTarget();

/// Registers the LLVM IR translations of the dialects a gpu.module in LLVM +
/// ROCDL form holds (builtin, llvm, rocdl, gpu).
void registerGPUModuleTranslations(DialectRegistry &registry);

/// Creates the AMDGPU TargetMachine for `chip` at `optLevel` (0..3).
llvm::Expected<std::unique_ptr<llvm::TargetMachine>>
createTargetMachine(const ChipInfo &chip, unsigned optLevel = 3);

/// Translates the body of `module` (LLVM + ROCDL dialects, as produced by
/// convert-gpu-to-rocdl) to LLVM IR with triple amdgcn-amd-amdhsa, the AMDGPU
/// data layout and the code-object-version module flag. Registers the needed
/// translations on the module's context (not thread-safe: when translating
/// from several threads, register them once up front with
/// `registerGPUModuleTranslations`). Errors are emitted on `module`.
FailureOr<std::unique_ptr<llvm::Module>> translateGPUModuleToLLVMIR(
    gpu::GPUModuleOp module, llvm::LLVMContext &llvmContext,
    unsigned codeObjectVersion = kDefaultCodeObjectVersion);

/// Sets triple, data layout and the code-object-version flag on `module`, and
/// checks that no function asks for another processor than `chip`.
llvm::Error
prepareModuleForChip(llvm::Module &module, const ChipInfo &chip,
                     unsigned codeObjectVersion = kDefaultCodeObjectVersion);

/// Runs LLVM's standard per-module pipeline at `optLevel` (0..3) in place,
/// with the AMDGPU TargetMachine's analyses and pass callbacks.
llvm::Error optimizeModule(llvm::Module &module, const ChipInfo &chip,
                           unsigned optLevel = 3);

/// Returns the AMDGPU assembly of `module` for `chip`: a copy is prepared,
/// optimized at `optLevel` and compiled; `module` itself is left untouched.
llvm::Expected<std::string> emitAssembly(const llvm::Module &module,
                                         const ChipInfo &chip,
                                         unsigned optLevel = 3);

/// As `emitAssembly`, but returns a relocatable ELF object.
llvm::Expected<std::string> emitObject(const llvm::Module &module,
                                       const ChipInfo &chip,
                                       unsigned optLevel = 3);

/// Note: the lld library resets every LLVM command-line option (llvm::cl) to
/// its default when it runs; a tool must read its own flags before linking.
///
/// Links a relocatable AMDGPU object into a code object (`ld.lld -shared`)
/// with the lld library, in-process, under a process-wide lock. The error
/// carries lld's own diagnostics.
llvm::Expected<std::string> linkCodeObject(StringRef relocatableObject);

/// Translates, optimizes, compiles and (for CodeObject) links `module` for
/// `chip`. Every failure is emitted as a diagnostic on `module`.
FailureOr<std::string>
serializeGPUModule(gpu::GPUModuleOp module, const ChipInfo &chip,
                   const SerializationOptions &options = {});

} // namespace mlir::mlafp8

#endif // MLA_FP8_TARGET_SERIALIZATION_H
