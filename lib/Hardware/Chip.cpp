//===- Chip.cpp - The AMD GPUs mla-fp8 generates code for -----------------===//

#include "mla-fp8/Hardware/Chip.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/BinaryFormat/ELF.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir::mlafp8;
using llvm::StringRef;

// Empty feature strings on purpose: xnack and sramecc stay "any", so the code
// object's target id is plain "gfx942"/"gfx950" and it loads whatever mode the
// driver runs the GPU in.
static constexpr ChipInfo kChips[] = {
    {
        /*name=*/"gfx942",
        /*marketingNames=*/"AMD Instinct MI300X, MI300A, MI325X",
        /*arch=*/Arch::CDNA3,
        /*waveSize=*/64,
        /*ldsBytesPerWorkgroup=*/64 * 1024,
        /*maxVgprsPerLane=*/512,
        /*maxArchVgprsPerLane=*/256,
        /*vgprAllocGranule=*/8,
        /*maxSgprs=*/102,
        /*maxWavesPerSimd=*/8,
        /*simdsPerCU=*/4,
        /*numCUs=*/304,
        /*fp8Format=*/FP8Family::FNUZ,
        /*fp8E4M3TypeName=*/"f8E4M3FNUZ",
        /*fp8E5M2TypeName=*/"f8E5M2FNUZ",
        /*elfMach=*/llvm::ELF::EF_AMDGPU_MACH_AMDGCN_GFX942,
        /*llvmFeatures=*/"",
    },
    {
        /*name=*/"gfx950",
        /*marketingNames=*/"AMD Instinct MI350X, MI355X",
        /*arch=*/Arch::CDNA4,
        /*waveSize=*/64,
        /*ldsBytesPerWorkgroup=*/160 * 1024,
        /*maxVgprsPerLane=*/512,
        /*maxArchVgprsPerLane=*/256,
        /*vgprAllocGranule=*/8,
        /*maxSgprs=*/102,
        /*maxWavesPerSimd=*/8,
        /*simdsPerCU=*/4,
        /*numCUs=*/256,
        /*fp8Format=*/FP8Family::OCP,
        /*fp8E4M3TypeName=*/"f8E4M3FN",
        /*fp8E5M2TypeName=*/"f8E5M2",
        /*elfMach=*/llvm::ELF::EF_AMDGPU_MACH_AMDGCN_GFX950,
        /*llvmFeatures=*/"",
    },
};

StringRef mlir::mlafp8::stringifyFP8Family(FP8Family format) {
  switch (format) {
  case FP8Family::FNUZ:
    return "FNUZ";
  case FP8Family::OCP:
    return "OCP";
  }
  llvm_unreachable("unknown fp8 format");
}

StringRef ChipInfo::getArchitectureName() const {
  switch (arch) {
  case Arch::CDNA3:
    return "CDNA3";
  case Arch::CDNA4:
    return "CDNA4";
  }
  llvm_unreachable("unknown architecture");
}

llvm::SmallVector<const MfmaLayout *, 8> ChipInfo::getMfmas() const {
  llvm::SmallVector<const MfmaLayout *, 8> mfmas;
  for (const MfmaLayout &mfma : getMfmaLayouts())
    if (hasMfma(mfma))
      mfmas.push_back(&mfma);
  return mfmas;
}

const MfmaLayout *ChipInfo::findFP8Mfma(unsigned m, unsigned n, unsigned k,
                                        bool blockScaled) const {
  const MfmaLayout *mfma = lookupMfma(m, n, k, blockScaled);
  return mfma && hasMfma(*mfma) ? mfma : nullptr;
}

std::string ChipInfo::getTargetID() const {
  return (kAMDGPUTriple + "--" + name).str();
}

llvm::ArrayRef<ChipInfo> mlir::mlafp8::getSupportedChips() { return kChips; }

const ChipInfo *mlir::mlafp8::lookupChip(StringRef name) {
  for (const ChipInfo &chip : kChips)
    if (chip.name == name)
      return &chip;
  return nullptr;
}

const ChipInfo *mlir::mlafp8::lookupChipByElfMach(unsigned elfMach) {
  for (const ChipInfo &chip : kChips)
    if (chip.elfMach == elfMach)
      return &chip;
  return nullptr;
}

std::string mlir::mlafp8::joinChipNames(StringRef separator) {
  std::string names;
  for (const ChipInfo &chip : kChips) {
    if (!names.empty())
      names += separator;
    names += chip.name;
  }
  return names;
}

std::string mlir::mlafp8::describeUnsupportedChip(StringRef name) {
  return ("unknown chip '" + name + "'; supported chips: " + joinChipNames())
      .str();
}

/// The builtin fp8 types and the encoding family each belongs to; E4M3/E5M2
/// without FNUZ are OCP. Types absent here (f8E4M3, f8E3M4, f8E4M3B11FNUZ,
/// f8E8M0FNU) no chip's fp8 MFMA takes.
static std::optional<FP8Family> getFP8FamilyOfTypeName(StringRef name) {
  if (name == "f8E4M3FNUZ" || name == "f8E5M2FNUZ")
    return FP8Family::FNUZ;
  if (name == "f8E4M3FN" || name == "f8E5M2")
    return FP8Family::OCP;
  return std::nullopt;
}

std::optional<std::string>
mlir::mlafp8::checkFP8FormatForChip(const ChipInfo &chip,
                                    StringRef fp8TypeName) {
  if (fp8TypeName == chip.fp8E4M3TypeName ||
      fp8TypeName == chip.fp8E5M2TypeName)
    return std::nullopt;

  std::string message;
  llvm::raw_string_ostream os(message);
  std::optional<FP8Family> format = getFP8FamilyOfTypeName(fp8TypeName);
  if (!format) {
    os << chip.name << " has no fp8 MFMA for '" << fp8TypeName << "'; it uses "
       << stringifyFP8Family(chip.fp8Format) << " fp8 (" << chip.fp8E4M3TypeName
       << " or " << chip.fp8E5M2TypeName << ")";
    return message;
  }
  // Name the type of the same width split (E4M3 vs E5M2) the caller asked for.
  StringRef wanted = fp8TypeName.starts_with("f8E4M3") ? chip.fp8E4M3TypeName
                                                       : chip.fp8E5M2TypeName;
  os << chip.name << " uses " << stringifyFP8Family(chip.fp8Format) << " fp8 ("
     << wanted << "), not " << fp8TypeName;
  return message;
}
