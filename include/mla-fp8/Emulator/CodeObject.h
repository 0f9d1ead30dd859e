//===- CodeObject.h - AMDGPU code objects for the emulator ------*- C++ -*-===//
//
// Loads an HSACO (AMDGPU ELF code object): kernels by symbol, their 64-byte
// kernel descriptors and the MessagePack metadata note, read through the
// checked reader of mla-fp8/CodeObject. The chip is a row of the one chip
// table (mla-fp8/Hardware/Chip.h).
//
//===----------------------------------------------------------------------===//

#ifndef MLA_FP8_EMULATOR_CODEOBJECT_H
#define MLA_FP8_EMULATOR_CODEOBJECT_H

#include "mla-fp8/Hardware/Chip.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace mlir::mlafp8::emu {

/// The 64-byte kernel descriptor (`<kernel>.kd`), decoded field by field.
struct KernelDescriptor {
  uint32_t groupSegmentFixedSize = 0;
  uint32_t privateSegmentFixedSize = 0;
  uint32_t kernargSize = 0;
  /// Signed offset of the entry point from the descriptor's address.
  int64_t kernelCodeEntryByteOffset = 0;
  uint32_t computePgmRsrc3 = 0;
  uint32_t computePgmRsrc1 = 0;
  uint32_t computePgmRsrc2 = 0;
  uint16_t kernelCodeProperties = 0;
  uint16_t kernargPreload = 0;

  /// Decodes the 64 raw bytes.
  static KernelDescriptor decode(llvm::ArrayRef<uint8_t> bytes);

  unsigned getUserSgprCount() const { return (computePgmRsrc2 >> 1) & 31; }
  bool enablesPrivateSegment() const { return computePgmRsrc2 & 1; }
  bool enablesWorkgroupId(unsigned dim) const {
    return (computePgmRsrc2 >> (7 + dim)) & 1;
  }
  bool enablesWorkgroupInfo() const { return (computePgmRsrc2 >> 10) & 1; }
  /// 0 = X only, 1 = XY, 2 = XYZ.
  unsigned getWorkitemIdVgprs() const { return (computePgmRsrc2 >> 11) & 3; }
  /// Bit `bit` of kernel_code_properties (1 dispatch ptr, 2 queue ptr, 3
  /// kernarg ptr, 4 dispatch id, 5 flat scratch init, 6 private segment size).
  bool hasCodeProperty(unsigned bit) const {
    return (kernelCodeProperties >> bit) & 1;
  }
  unsigned getKernargPreloadDwords() const { return kernargPreload & 0x7f; }
  unsigned getKernargPreloadOffsetDwords() const { return kernargPreload >> 7; }
  /// First AGPR of the unified register file: (field + 1) * 4.
  unsigned getAccumOffset() const { return ((computePgmRsrc3 & 63) + 1) * 4; }
  /// Total VGPRs + AGPRs the wave is given.
  unsigned getAllocatedVgprs() const {
    return ((computePgmRsrc1 & 63) + 1) * 8;
  }
  bool getIEEEMode() const { return (computePgmRsrc1 >> 23) & 1; }
  bool getDX10Clamp() const { return (computePgmRsrc1 >> 21) & 1; }
  bool getFP16Ovfl() const { return (computePgmRsrc1 >> 26) & 1; }
};

/// One explicit or hidden kernel argument as the metadata lists it.
struct KernelArgInfo {
  std::string name;
  std::string valueKind;
  uint32_t offset = 0;
  uint32_t size = 0;
};

/// A kernel of a code object.
struct KernelInfo {
  std::string name;
  KernelDescriptor descriptor;
  /// Address (in the code object's virtual address space) of the descriptor
  /// and of the first instruction.
  uint64_t descriptorAddress = 0;
  uint64_t entryAddress = 0;
  /// From the metadata; kernargSegmentSize falls back to the descriptor.
  uint32_t kernargSegmentSize = 0;
  uint32_t kernargSegmentAlign = 8;
  uint32_t maxFlatWorkgroupSize = 1024;
  /// The workgroup size the kernel was compiled for (.reqd_workgroup_size),
  /// when the metadata gives one: a launch must use exactly this.
  std::optional<std::array<uint32_t, 3>> reqdWorkgroupSize;
  uint32_t wavefrontSize = 64;
  uint32_t sgprCount = 0, vgprCount = 0, agprCount = 0;
  bool usesDynamicStack = false;
  std::vector<KernelArgInfo> args;
};

/// An executable image: the loaded segments of a code object (or raw code for
/// tests) plus its kernels.
class CodeObject {
public:
  /// Parses an ELF code object held in `bytes` (copied).
  static llvm::Expected<std::unique_ptr<CodeObject>>
  fromBytes(llvm::ArrayRef<uint8_t> bytes);

  /// Reads and parses the code object at `path`.
  static llvm::Expected<std::unique_ptr<CodeObject>>
  fromFile(llvm::StringRef path);

  /// An image holding only `code` at address 0, with one kernel `name` whose
  /// descriptor is `descriptor` (its entry offset is ignored): lets unit tests
  /// run instructions assembled without a linker.
  static std::unique_ptr<CodeObject>
  fromRawCode(llvm::ArrayRef<uint8_t> code, const ChipInfo &chip,
              llvm::StringRef name, const KernelDescriptor &descriptor);

  /// The chip the code object was compiled for.
  const ChipInfo &getChip() const { return *chip; }
  const std::vector<KernelInfo> &getKernels() const { return kernels; }

  /// The kernel named `name` (with or without the ".kd" suffix).
  llvm::Expected<const KernelInfo &> getKernel(llvm::StringRef name) const;

  /// The loaded image; byte i is at virtual address i.
  llvm::ArrayRef<uint8_t> getImage() const { return image; }

private:
  const ChipInfo *chip = nullptr;
  std::vector<uint8_t> image;
  std::vector<KernelInfo> kernels;
};

} // namespace mlir::mlafp8::emu

#endif // MLA_FP8_EMULATOR_CODEOBJECT_H
