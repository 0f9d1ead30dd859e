//===- Chip.h - The AMD GPUs mla-fp8 generates code for ---------*- C++ -*-===//
//
// One table of the hardware facts that tile selection, the kernel lowering and
// the serializer depend on. Everything chip-specific is read from here.
//
//===----------------------------------------------------------------------===//

#ifndef MLA_FP8_TARGET_CHIP_H
#define MLA_FP8_TARGET_CHIP_H

#include "mlir/IR/Types.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/ArrayRef.h"
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
StringRef stringifyFP8Family(FP8Family format);

/// An fp8 MFMA instruction shape: D(MxN) += A(MxK) * B(KxN) per wave.
struct MfmaInstruction {
  unsigned m;
  unsigned n;
  unsigned k;
  /// The assembler mnemonic, e.g. "v_mfma_f32_16x16x32_fp8_fp8".
  StringRef mnemonic;
  /// True for gfx950's block-scaled f8f6f4 MFMAs (v_mfma_scale_*): A and B
  /// take an E8M0 scale per 32 elements of K.
  bool blockScaled;
};

/// Hardware facts of one chip. All sizes are in bytes unless named otherwise.
struct ChipInfo {
  /// LLVM processor name, e.g. "gfx942".
  StringRef name;
  /// Products built on the chip, for messages and reports.
  StringRef marketingNames;
  /// The architecture generation, e.g. "CDNA3".
  StringRef architecture;
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
  StringRef fp8E4M3TypeName;
  StringRef fp8E5M2TypeName;
  /// fp8 MFMA shapes the chip implements.
  ArrayRef<MfmaInstruction> fp8Mfmas;
  /// The EF_AMDGPU_MACH value in the low byte of a code object's e_flags.
  unsigned elfMach;
  /// The LLVM target features the serializer passes to the TargetMachine.
  StringRef llvmFeatures;

  /// Returns the fp8 MFMA of the given shape (block-scaled or not), or null if
  /// the chip lacks it.
  const MfmaInstruction *findFP8Mfma(unsigned m, unsigned n, unsigned k,
                                     bool blockScaled = false) const;
  /// Returns the LLVM target id, e.g. "amdgcn-amd-amdhsa--gfx942".
  std::string getTargetID() const;
};

/// The target triple of every code object this project produces.
inline constexpr StringLiteral kAMDGPUTriple = "amdgcn-amd-amdhsa";

/// Returns every chip mla-fp8 supports, in a stable order.
ArrayRef<ChipInfo> getSupportedChips();

/// Returns the chip named `name` (e.g. "gfx942"), or null if unsupported.
const ChipInfo *lookupChip(StringRef name);

/// Returns the chip whose EF_AMDGPU_MACH value is `elfMach`, or null.
const ChipInfo *lookupChipByElfMach(unsigned elfMach);

/// Returns e.g. "unknown chip 'gfx90a'; supported chips: gfx942, gfx950".
std::string describeUnsupportedChip(StringRef name);

/// Returns std::nullopt if the chip's MFMAs take fp8 values of the builtin type
/// named `fp8TypeName` (e.g. "f8E4M3FNUZ"), or otherwise a message naming the
/// format the chip needs, e.g. "gfx950 uses OCP fp8 (f8E4M3FN), not
/// f8E4M3FNUZ".
std::optional<std::string> checkFP8FormatForChip(const ChipInfo &chip,
                                                 StringRef fp8TypeName);

/// As above, for an MLIR type.
std::optional<std::string> checkFP8FormatForChip(const ChipInfo &chip,
                                                 Type type);

} // namespace mlir::mlafp8

#endif // MLA_FP8_TARGET_CHIP_H
