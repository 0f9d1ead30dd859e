//===- CodeObject.h - Reading AMDGPU code objects ---------------*- C++ -*-===//
//
// Reads back what the serializer produced: the kernels' metadata from the
// NT_AMDGPU_METADATA note and instruction statistics from the disassembled
// code. The quality reports and the manifest are built from these.
//
//===----------------------------------------------------------------------===//

#ifndef MLA_FP8_TARGET_CODEOBJECT_H
#define MLA_FP8_TARGET_CODEOBJECT_H

#include "mlir/Support/LLVM.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace mlir::mlafp8 {

/// One kernel argument as the metadata note describes it (.args entry).
struct KernelArgMetadata {
  /// Byte offset in the kernarg segment.
  uint64_t offset = 0;
  /// Size in bytes.
  uint64_t size = 0;
  /// e.g. "global_buffer", "by_value", "hidden_block_count_x".
  std::string valueKind;
  /// The source-level name; absent for hidden arguments and unnamed ones.
  std::optional<std::string> name;
  /// e.g. "global" for pointers; absent for values.
  std::optional<std::string> addressSpace;
};

/// The metadata of one kernel (an amdhsa.kernels entry).
struct KernelMetadata {
  /// The kernel's name, e.g. "bmm_gfx942_m1_16".
  std::string name;
  /// Its kernel descriptor symbol, the name plus ".kd".
  std::string symbol;
  uint64_t kernargSegmentSize = 0;
  uint64_t kernargSegmentAlign = 0;
  /// Static LDS bytes.
  uint64_t groupSegmentFixedSize = 0;
  /// Scratch bytes per work-item; nonzero means spills or stack.
  uint64_t privateSegmentFixedSize = 0;
  unsigned vgprCount = 0;
  unsigned agprCount = 0;
  unsigned sgprCount = 0;
  unsigned vgprSpillCount = 0;
  unsigned sgprSpillCount = 0;
  unsigned wavefrontSize = 0;
  unsigned maxFlatWorkgroupSize = 0;
  bool usesDynamicStack = false;
  /// Explicit arguments first, then the hidden ones, in note order.
  std::vector<KernelArgMetadata> args;
};

/// What a code object says about itself.
struct CodeObjectMetadata {
  /// e.g. "amdgcn-amd-amdhsa--gfx942" (amdhsa.target).
  std::string targetID;
  /// The processor part of the target id, e.g. "gfx942".
  std::string processor;
  /// The code-object version, from the ELF ABI version byte (v6 for LLVM 22).
  unsigned codeObjectVersion = 0;
  /// amdhsa.version, e.g. {1, 2}.
  unsigned metadataVersionMajor = 0;
  unsigned metadataVersionMinor = 0;
  /// e_flags of the ELF header; the low byte is the EF_AMDGPU_MACH value.
  unsigned elfFlags = 0;
  std::vector<KernelMetadata> kernels;

  /// Returns the kernel named `name`, or null.
  const KernelMetadata *findKernel(StringRef name) const;
};

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

/// Parses an AMDGPU ELF (code object or relocatable object) and its
/// NT_AMDGPU_METADATA note. Malformed input gives an error, never a crash.
llvm::Expected<CodeObjectMetadata> readCodeObjectMetadata(StringRef elfBytes);

/// Parses the MessagePack payload of an NT_AMDGPU_METADATA note into the
/// kernel list and target id of `result`.
llvm::Error parseAMDGPUMetadataNote(StringRef msgpackBlob,
                                    CodeObjectMetadata &result);

/// Disassembles the function symbol `kernelName` of an AMDGPU ELF with LLVM's
/// MC disassembler and counts its instructions.
llvm::Expected<KernelInstructionStats>
countKernelInstructions(StringRef elfBytes, StringRef kernelName);

} // namespace mlir::mlafp8

#endif // MLA_FP8_TARGET_CODEOBJECT_H
