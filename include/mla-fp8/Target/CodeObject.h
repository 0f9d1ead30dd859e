//===- CodeObject.h - Reading AMDGPU code objects ---------------*- C++ -*-===//
//
// Reads back what the serializer produced: the kernels' metadata from the
// NT_AMDGPU_METADATA note (the checked reader of mla-fp8/CodeObject, which
// this header re-exports) and instruction statistics from the disassembled
// code. The quality reports and the manifest are built from these.
//
//===----------------------------------------------------------------------===//

#ifndef MLA_FP8_TARGET_CODEOBJECT_H
#define MLA_FP8_TARGET_CODEOBJECT_H

#include "mla-fp8/CodeObject/Metadata.h"
#include "mlir/Support/LLVM.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace mlir::mlafp8 {

/// Instruction statistics of one kernel's machine code.
struct KernelInstructionStats {
  /// Bytes between the kernel's symbol and its end (not the trailing padding).
  uint64_t codeBytes = 0;
  unsigned numInstructions = 0;
  /// Instructions whose mnemonic starts with "v_mfma".
  unsigned numMfma = 0;
  /// Count per mnemonic, sorted by mnemonic so reports are stable.
  std::map<std::string, unsigned> mnemonicCounts;
};

/// Disassembles the function symbol `kernelName` of an AMDGPU ELF with LLVM's
/// MC disassembler and counts its instructions.
llvm::Expected<KernelInstructionStats>
countKernelInstructions(StringRef elfBytes, StringRef kernelName);

} // namespace mlir::mlafp8

#endif // MLA_FP8_TARGET_CODEOBJECT_H
