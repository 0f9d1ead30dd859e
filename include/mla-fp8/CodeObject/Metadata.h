//===- Metadata.h - the checked AMDGPU code-object reader -------*- C++ -*-===//
//
// The one reader of an AMDGPU ELF's NT_AMDGPU_METADATA note, shared by the
// Target library (reports, manifests), the emulator and the run-time loader.
// It depends on LLVM's Support and Object only, never on MLIR.
//
// The note is untrusted input: its MessagePack is decoded into a bounded tree
// (depth and size limits, every node's kind checked before it is read)
// without llvm::msgpack::Document, whose key ordering and printing trap on
// unexpected node kinds. Malformed input gives an error, never a signal.
//
//===----------------------------------------------------------------------===//

#ifndef MLA_FP8_CODEOBJECT_METADATA_H
#define MLA_FP8_CODEOBJECT_METADATA_H

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Object/ELFObjectFile.h"
#include "llvm/Support/Error.h"

#include <array>
#include <cstdint>
#include <memory>
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
  /// .reqd_workgroup_size, when the kernel was compiled for one.
  std::optional<std::array<uint32_t, 3>> reqdWorkgroupSize;
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
  /// Which of the kernels' names and descriptor symbols (.name, .symbol) the
  /// ELF symbol table defines, sorted: the only names ever looked up, so the
  /// reader copies no other.
  std::vector<std::string> definedSymbols;
  /// (name, position in kernels), sorted by name, the first of equal names
  /// first; built by indexKernels().
  std::vector<std::pair<std::string, size_t>> kernelIndex;

  /// Returns the kernel named `name` (the first, should two share it), or
  /// null. A lookup in the name index when indexKernels() built one for as
  /// many kernels as there are now (readCodeObjectMetadata does), else a
  /// scan; call indexKernels() again after renaming kernels.
  const KernelMetadata *findKernel(llvm::StringRef name) const;
  /// Indexes `kernels` by name, so that each lookup costs O(log n) instead
  /// of a scan: a bundle loader looks up every manifest entry, and up to
  /// 4096 kernels a chip made a forged bundle's load quadratic.
  void indexKernels();
  /// Whether the symbol table defines `name`.
  bool definesSymbol(llvm::StringRef name) const;
};

/// Limits of the note decoder: deeper or larger notes are refused. AMDGPU
/// metadata nests four levels (root, kernels, kernel, args).
inline constexpr unsigned kMaxMetadataDepth = 16;

/// Opens `bytes` as a 64-bit little-endian AMDGPU ELF. The object refers to
/// `bytes`, which must outlive it.
llvm::Expected<std::unique_ptr<llvm::object::ELF64LEObjectFile>>
openAMDGPUElf(llvm::StringRef bytes);

/// Calls `visit(symbol, name)` for each defined symbol of `file`'s static
/// symbol table, or of its dynamic one when there is none, until `visit`
/// returns false. The tables are read through ELFFile's checked accessors, so
/// a damaged table (entry size, extent, name offsets) is an error, never a
/// walk past the bytes or over billions of phantom entries. With
/// `maxNameBytes`, a name is read no further than that, and symbols with
/// longer names are not visited: a forged table of many long names then
/// costs no more than one of short names.
llvm::Error
forEachDefinedSymbol(const llvm::object::ELF64LEFile &file,
                     llvm::function_ref<bool(const llvm::object::ELF64LE::Sym &,
                                             llvm::StringRef)>
                         visit,
                     std::optional<size_t> maxNameBytes = std::nullopt);

/// The largest NT_AMDGPU_METADATA note read: about 1 KiB per kernel, so
/// room for twice the kernels a manifest may list per chip.
inline constexpr uint64_t kMaxMetadataNoteBytes = uint64_t(8) << 20;

/// Parses an AMDGPU ELF (code object or relocatable object) and its
/// NT_AMDGPU_METADATA note. Malformed input gives an error, never a crash.
llvm::Expected<CodeObjectMetadata>
readCodeObjectMetadata(llvm::StringRef elfBytes);

/// Parses the MessagePack payload of an NT_AMDGPU_METADATA note into the
/// kernel list and target id of `result`.
llvm::Error parseAMDGPUMetadataNote(llvm::StringRef msgpackBlob,
                                    CodeObjectMetadata &result);

} // namespace mlir::mlafp8

#endif // MLA_FP8_CODEOBJECT_METADATA_H
