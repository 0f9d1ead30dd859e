//===- Mfma.cpp - The fp8 MFMA records ------------------------------------===//

#include "mla-fp8/Hardware/Mfma.h"

using namespace mlir::mlafp8;

static constexpr uint8_t kCDNA3 = static_cast<uint8_t>(Arch::CDNA3);
static constexpr uint8_t kCDNA4 = static_cast<uint8_t>(Arch::CDNA4);

// Adding an MFMA is adding its row here: the chips that have it, the tile
// verifier, tile selection and the generator read this table. The layouts
// are ISA-NOTES.md §4 ("Layouts"). Every row is checked against the
// emulator's own semantics (MfmaLayoutAgreementTest), so a row comes with
// its emulation: the block-scaled v_mfma_scale_* forms join when the
// emulator models them. constexpr: the records exist before any
// global initializer of another file runs.
static constexpr MfmaLayout kMfmas[] = {
    // shape, mnemonic, m, n, k, kPerRun, runs, accRowsPerRun, cycles,
    // f8f6f4, blockScaled, archs
    {"m16n16k32", "v_mfma_f32_16x16x32_fp8_fp8", 16, 16, 32, 8, 1, 4, 16, false,
     false, kCDNA3 | kCDNA4},
    {"m32n32k16", "v_mfma_f32_32x32x16_fp8_fp8", 32, 32, 16, 8, 1, 4, 32, false,
     false, kCDNA3 | kCDNA4},
    // gfx950's f8f6f4 family with fp8 operands: K = 128 is one quantization
    // group of 128 per 16x16 block.
    {"m16n16k128", "v_mfma_f32_16x16x128_f8f6f4", 16, 16, 128, 16, 2, 4, 32,
     true, false, kCDNA4},
    {"m32n32k64", "v_mfma_f32_32x32x64_f8f6f4", 32, 32, 64, 16, 2, 4, 64, true,
     false, kCDNA4},
};

OperandElement MfmaLayout::getOperandElement(unsigned lane,
                                             unsigned byte) const {
  unsigned k = (byte / kPerRun) * kPerRun * getLaneGroups() +
               (lane / m) * kPerRun + byte % kPerRun;
  return {lane % m, k};
}

OperandSlot MfmaLayout::locateOperand(unsigned row, unsigned k) const {
  unsigned runSpan = kPerRun * getLaneGroups();
  unsigned within = k % runSpan;
  return {row + m * (within / kPerRun), (k / runSpan) * kPerRun + k % kPerRun};
}

AccumulatorElement MfmaLayout::getAccumulatorElement(unsigned lane,
                                                     unsigned element) const {
  unsigned row = (element / accRowsPerRun) * accRowsPerRun * getLaneGroups() +
                 (lane / n) * accRowsPerRun + element % accRowsPerRun;
  return {row, lane % n};
}

llvm::ArrayRef<MfmaLayout> mlir::mlafp8::getMfmaLayouts() { return kMfmas; }

const MfmaLayout *mlir::mlafp8::lookupMfma(llvm::StringRef shapeName) {
  for (const MfmaLayout &mfma : kMfmas)
    if (!mfma.blockScaled && mfma.shapeName == shapeName)
      return &mfma;
  return nullptr;
}

const MfmaLayout *mlir::mlafp8::lookupMfma(unsigned m, unsigned n, unsigned k,
                                           bool blockScaled) {
  for (const MfmaLayout &mfma : kMfmas)
    if (mfma.m == m && mfma.n == n && mfma.k == k &&
        mfma.blockScaled == blockScaled)
      return &mfma;
  return nullptr;
}
