//===- Chip.h - The AMD GPUs mla-fp8 generates code for ---------*- C++ -*-===//
//
// One table of the hardware facts that tile selection, the kernel lowering,
// the serializer and the emulator depend on. Everything chip-specific is read
// from here: a new chip is one row of kChips (Chip.cpp), and the MFMAs it has
// follow from its architecture (Mfma.h).
//
// MLIR-free (LLVM Support only). Target/Chip.h adds the checks that take MLIR
// types.
//
//===----------------------------------------------------------------------===//

#ifndef MLA_FP8_HARDWARE_CHIP_H
#define MLA_FP8_HARDWARE_CHIP_H

#include "mla-fp8/Hardware/Mfma.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>

namespace mlir::mlafp8 {

/// The fp8 encoding a chip's MFMA and convert instructions implement.
enum class FP8Family {
  /// gfx942: "no negative zero, no infinities" encodings (bias 8 / 16).
  FNUZ,
  /// gfx950: the OCP OFP8 encodings (E4M3 with NaN only, E5M2 IEEE-like).
  OCP,
};

/// Returns "FNUZ" or "OCP".
llvm::StringRef stringifyFP8Family(FP8Family format);

/// Hardware facts of one chip. All sizes are in bytes unless named otherwise.
struct ChipInfo {
  /// LLVM processor name, e.g. "gfx942".
  llvm::StringRef name;
  /// Products built on the chip, for messages and reports.
  llvm::StringRef marketingNames;
  /// The architecture generation; it decides the chip's MFMAs.
  Arch arch;
  /// Lanes per wave; both chips only run wave64.
  unsigned waveSize;
  /// LDS a single workgroup may allocate.
  unsigned ldsBytesPerWorkgroup;
  /// Architectural plus accumulation VGPRs addressable per lane (unified file).
  unsigned maxVgprsPerLane;
  /// Architectural VGPRs (v0..) per lane; AGPRs take the rest.
  unsigned maxArchVgprsPerLane;
  /// VGPRs are allocated in granules of this many registers.
  unsigned vgprAllocGranule;
  /// SGPRs a kernel may use (excluding VCC, FLAT_SCRATCH and XNACK_MASK).
  unsigned maxSgprs;
  /// Waves each SIMD can hold at once; occupancy is bounded by it.
  unsigned maxWavesPerSimd;
  /// SIMDs per compute unit.
  unsigned simdsPerCU;
  /// Compute units of the full product (MI300X / MI355X).
  unsigned numCUs;
  /// The fp8 encoding of the chip's MFMAs and converts.
  FP8Family fp8Format;
  /// MLIR builtin type names of the two fp8 formats the chip computes with.
  llvm::StringRef fp8E4M3TypeName;
  llvm::StringRef fp8E5M2TypeName;
  /// The EF_AMDGPU_MACH value in the low byte of a code object's e_flags.
  unsigned elfMach;
  /// The LLVM target features the serializer passes to the TargetMachine.
  llvm::StringRef llvmFeatures;

  /// "CDNA3" or "CDNA4".
  llvm::StringRef getArchitectureName() const;
  /// The fp8 MFMAs the chip implements, in the order of getMfmaLayouts().
  llvm::SmallVector<const MfmaLayout *, 8> getMfmas() const;
  /// Returns the fp8 MFMA of the given shape (block-scaled or not), or null if
  /// the chip lacks it.
  const MfmaLayout *findFP8Mfma(unsigned m, unsigned n, unsigned k,
                                bool blockScaled = false) const;
  /// Whether the chip implements `mfma`.
  bool hasMfma(const MfmaLayout &mfma) const { return mfma.isOn(arch); }
  /// Returns the LLVM target id, e.g. "amdgcn-amd-amdhsa--gfx942".
  std::string getTargetID() const;
};

/// The target triple of every code object this project produces.
inline constexpr llvm::StringLiteral kAMDGPUTriple = "amdgcn-amd-amdhsa";

/// Returns every chip mla-fp8 supports, in a stable order.
llvm::ArrayRef<ChipInfo> getSupportedChips();

/// Returns the chip named `name` (e.g. "gfx942"), or null if unsupported.
const ChipInfo *lookupChip(llvm::StringRef name);

/// Returns the chip whose EF_AMDGPU_MACH value is `elfMach`, or null.
const ChipInfo *lookupChipByElfMach(unsigned elfMach);

/// The supported chips' names, e.g. "gfx942, gfx950" (for messages, help
/// texts and defaults).
std::string joinChipNames(llvm::StringRef separator = ", ");

/// Returns e.g. "unknown chip 'gfx90a'; supported chips: gfx942, gfx950".
std::string describeUnsupportedChip(llvm::StringRef name);

/// Returns std::nullopt if the chip's MFMAs take fp8 values of the builtin type
/// named `fp8TypeName` (e.g. "f8E4M3FNUZ"), or otherwise a message naming the
/// format the chip needs, e.g. "gfx950 uses OCP fp8 (f8E4M3FN), not
/// f8E4M3FNUZ".
std::optional<std::string> checkFP8FormatForChip(const ChipInfo &chip,
                                                 llvm::StringRef fp8TypeName);

} // namespace mlir::mlafp8

#endif // MLA_FP8_HARDWARE_CHIP_H
