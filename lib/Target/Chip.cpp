//===- Chip.cpp - The AMD GPUs mla-fp8 generates code for -----------------===//

#include "mla-fp8/Target/Chip.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/BinaryFormat/ELF.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::mlafp8;

// Both chips implement the two dense fp8 shapes; gfx950 adds the f8f6f4 family
// (also usable with fp8 operands), plain and with E8M0 block scales.
static constexpr MfmaInstruction kGfx942Mfmas[] = {
    {16, 16, 32, "v_mfma_f32_16x16x32_fp8_fp8", false},
    {32, 32, 16, "v_mfma_f32_32x32x16_fp8_fp8", false},
};
static constexpr MfmaInstruction kGfx950Mfmas[] = {
    {16, 16, 32, "v_mfma_f32_16x16x32_fp8_fp8", false},
    {32, 32, 16, "v_mfma_f32_32x32x16_fp8_fp8", false},
    {16, 16, 128, "v_mfma_f32_16x16x128_f8f6f4", false},
    {32, 32, 64, "v_mfma_f32_32x32x64_f8f6f4", false},
    {16, 16, 128, "v_mfma_scale_f32_16x16x128_f8f6f4", true},
    {32, 32, 64, "v_mfma_scale_f32_32x32x64_f8f6f4", true},
};

// Empty feature strings on purpose: xnack and sramecc stay "any", so the code
// object's target id is plain "gfx942"/"gfx950" and it loads whatever mode the
// driver runs the GPU in.
static const ChipInfo kChips[] = {
    {
        /*name=*/"gfx942",
        /*marketingNames=*/"AMD Instinct MI300X, MI300A, MI325X",
        /*architecture=*/"CDNA3",
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
        /*fp8Mfmas=*/kGfx942Mfmas,
        /*elfMach=*/llvm::ELF::EF_AMDGPU_MACH_AMDGCN_GFX942,
        /*llvmFeatures=*/"",
    },
    {
        /*name=*/"gfx950",
        /*marketingNames=*/"AMD Instinct MI350X, MI355X",
        /*architecture=*/"CDNA4",
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
        /*fp8Mfmas=*/kGfx950Mfmas,
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

const MfmaInstruction *ChipInfo::findFP8Mfma(unsigned m, unsigned n, unsigned k,
                                             bool blockScaled) const {
  for (const MfmaInstruction &shape : fp8Mfmas)
    if (shape.m == m && shape.n == n && shape.k == k &&
        shape.blockScaled == blockScaled)
      return &shape;
  return nullptr;
}

std::string ChipInfo::getTargetID() const {
  return (kAMDGPUTriple + "--" + name).str();
}

ArrayRef<ChipInfo> mlir::mlafp8::getSupportedChips() { return kChips; }

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

std::string mlir::mlafp8::describeUnsupportedChip(StringRef name) {
  std::string message;
  llvm::raw_string_ostream os(message);
  os << "unknown chip '" << name << "'; supported chips: ";
  llvm::interleaveComma(kChips, os,
                        [&](const ChipInfo &chip) { os << chip.name; });
  return message;
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

std::optional<std::string>
mlir::mlafp8::checkFP8FormatForChip(const ChipInfo &chip, Type type) {
  std::string name;
  llvm::raw_string_ostream os(name);
  type.print(os);
  return checkFP8FormatForChip(chip, StringRef(name));
}
