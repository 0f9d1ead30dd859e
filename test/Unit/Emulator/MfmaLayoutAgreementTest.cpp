//===- MfmaLayoutAgreementTest.cpp - MFMA records against the emulator ----===//
//
// The MFMA layout records (mla-fp8/Hardware/Mfma.h) drive the generator; the
// emulator's MFMA semantics (lib/Emulator/MFMA.cpp) are written independently
// from the ISA notes. For every record the emulator implements, on every chip
// that has it, this test runs the instruction on inputs built from one-hot
// probes and requires every accumulator to hold what the record predicts:
//  - an operand byte (lane, byte) is A's element getOperandElement(lane, byte)
//    (or B's, reading the row as a column);
//  - accumulator e of a lane is D's element getAccumulatorElement(lane, e).
// D = A * B only shows which A and B elements meet, so the records' k indices
// are checked up to one permutation of k shared by A and B; rows, columns and
// the A-B pairing are checked exactly.
//
//===----------------------------------------------------------------------===//

#include "AsmHelper.h"

#include "mla-fp8/Hardware/Chip.h"
#include "mla-fp8/Reference/Formats.h"

#include "llvm/ADT/bit.h"

#include "gtest/gtest.h"

#include <string>
#include <vector>

using namespace mlir::mlafp8;
using namespace mlir::mlafp8::emu;

namespace {

/// First VGPR of A, B and D; C is the inline constant 0.
constexpr unsigned kARegs = 0, kBRegs = 8, kDRegs = 32;
/// v_mfma_scale_*'s scale operands, E8M0 127 = 2^0.
constexpr unsigned kScaleRegs = 24;

/// One probe: A(row, k) = B(k, col) = 1.
struct Probe {
  unsigned row, col, k;
};

/// Runs one MFMA record on one chip for many inputs.
class MfmaRunner {
public:
  MfmaRunner(const MfmaLayout &mfma, const ChipInfo &chip)
      : mfma(mfma), chip(chip),
        one(encodeFP8(1.0f, *parseFP8Format(chip.fp8E4M3TypeName),
                      FP8Overflow::NaN)) {}

  /// Assembles the instruction; an error names why it cannot run.
  llvm::Error init() {
    unsigned opRegs = mfma.getOperandBytesPerLane() / 4;
    auto range = [](unsigned first, unsigned count) {
      return "v[" + std::to_string(first) + ":" +
             std::to_string(first + count - 1) + "]";
    };
    std::string text = mfma.mnemonic.str() + " " +
                       range(kDRegs, mfma.getAccumulatorsPerLane()) + ", " +
                       range(kARegs, opRegs) + ", " + range(kBRegs, opRegs) +
                       ", 0";
    if (mfma.blockScaled)
      text += ", v" + std::to_string(kScaleRegs) + ", v" +
              std::to_string(kScaleRegs + 1);
    auto code = test::assemble(".text\n" + text + "\ns_nop 7\ns_endpgm\n",
                               chip.name.str());
    if (!code)
      return code.takeError();
    KernelDescriptor kd;
    // Denormals kept, DX10 clamp, IEEE mode: what LLVM writes.
    kd.computePgmRsrc1 = (0xfu << 16) | (1u << 21) | (1u << 23);
    std::shared_ptr<const CodeObject> co(
        CodeObject::fromRawCode(*code, chip, "mfma", kd));
    auto emu = Emulator::create(co);
    if (!emu)
      return emu.takeError();
    emulator = std::move(*emu);
    return llvm::Error::success();
  }

  /// Runs the instruction with A and B zero except the probes' elements,
  /// placed where the record says, and returns D by the record's accumulator
  /// layout (d[row * n + col]).
  llvm::Expected<std::vector<float>> run(llvm::ArrayRef<Probe> probes) {
    DispatchConfig cfg;
    cfg.workgroupSize = {kMfmaWaveSize, 1, 1};
    cfg.onWaveStart = [&](WaveState &w) {
      for (unsigned lane = 0; lane < kMfmaWaveSize; ++lane) {
        for (unsigned r = 0; r < 16; ++r)
          w.v(kARegs + r, lane) = 0;
        w.v(kScaleRegs, lane) = w.v(kScaleRegs + 1, lane) = 0x7f;
      }
      for (const Probe &p : probes) {
        setByte(w, kARegs, mfma.locateOperand(p.row, p.k));
        setByte(w, kBRegs, mfma.locateOperand(p.col, p.k));
      }
    };
    std::vector<float> d(mfma.m * mfma.n, -1.0f);
    cfg.onWaveEnd = [&](const WaveState &w) {
      for (unsigned lane = 0; lane < kMfmaWaveSize; ++lane)
        for (unsigned e = 0; e < mfma.getAccumulatorsPerLane(); ++e) {
          AccumulatorElement at = mfma.getAccumulatorElement(lane, e);
          d[at.row * mfma.n + at.col] =
              llvm::bit_cast<float>(w.v(kDRegs + e, lane));
        }
    };
    DeviceMemory memory;
    auto stats = emulator->dispatch("mfma", cfg, {}, memory);
    if (!stats)
      return stats.takeError();
    return d;
  }

  const MfmaLayout &mfma;
  const ChipInfo &chip;

private:
  void setByte(WaveState &w, unsigned firstReg, OperandSlot slot) {
    uint32_t &word = w.v(firstReg + slot.byte / 4, slot.lane);
    unsigned shift = 8 * (slot.byte % 4);
    word = (word & ~(0xffu << shift)) | (uint32_t(one) << shift);
  }

  uint8_t one;
  std::unique_ptr<Emulator> emulator;
};

/// D = A * B for the probes, in exact arithmetic.
std::vector<float> expectedProduct(const MfmaLayout &mfma,
                                   llvm::ArrayRef<Probe> probes) {
  std::vector<float> d(mfma.m * mfma.n, 0.0f);
  for (const Probe &a : probes)
    for (const Probe &b : probes)
      if (a.k == b.k)
        d[a.row * mfma.n + b.col] += 1.0f;
  return d;
}

/// Batches of probes with distinct k, so that every accumulator collects the
/// products of the pairs the record says meet:
///  - for each shift s < m, probe k meets at row (k + s) % m and column
///    (k + s + k / m) % n: every operand element (row, k) of A and (col, k) of
///    B is probed;
///  - for each shift s < n, row r meets column (r + s) % n at k = r % K: every
///    accumulator is probed.
std::vector<std::vector<Probe>> makeBatches(const MfmaLayout &mfma) {
  std::vector<std::vector<Probe>> batches;
  for (unsigned s = 0; s < mfma.m; ++s) {
    std::vector<Probe> &batch = batches.emplace_back();
    for (unsigned k = 0; k < mfma.k; ++k)
      batch.push_back({(k + s) % mfma.m, (k + s + k / mfma.m) % mfma.n, k});
  }
  for (unsigned s = 0; s < mfma.n; ++s) {
    std::vector<Probe> &batch = batches.emplace_back();
    for (unsigned r = 0; r < mfma.m; ++r)
      if (r < mfma.k)
        batch.push_back({r, (r + s) % mfma.n, r});
      else // more rows than k: the row shares k with row r % K
        batch.push_back({r, (r + s) % mfma.n, r % mfma.k});
  }
  return batches;
}

TEST(MfmaLayoutAgreement, EveryRecordOnEveryChipThatHasIt) {
  unsigned checked = 0;
  for (const MfmaLayout &mfma : getMfmaLayouts()) {
    for (const ChipInfo &chip : getSupportedChips()) {
      if (!chip.hasMfma(mfma))
        continue;
      SCOPED_TRACE(mfma.mnemonic.str() + " on " + chip.name.str());
      MfmaRunner runner(mfma, chip);
      if (llvm::Error error = runner.init())
        FAIL() << llvm::toString(std::move(error));
      // The probe layout must itself be the record's: locateOperand inverts
      // getOperandElement for every byte of every lane.
      for (unsigned lane = 0; lane < kMfmaWaveSize; ++lane)
        for (unsigned byte = 0; byte < mfma.getOperandBytesPerLane(); ++byte) {
          OperandElement el = mfma.getOperandElement(lane, byte);
          OperandSlot slot = mfma.locateOperand(el.row, el.k);
          ASSERT_EQ(slot.lane, lane);
          ASSERT_EQ(slot.byte, byte);
        }
      for (const std::vector<Probe> &batch : makeBatches(mfma)) {
        auto d = runner.run(batch);
        // Every record must run: a record without emulation is unchecked.
        if (!d)
          FAIL() << llvm::toString(d.takeError());
        std::vector<float> want = expectedProduct(mfma, batch);
        for (unsigned i = 0; i < mfma.m; ++i)
          for (unsigned j = 0; j < mfma.n; ++j)
            ASSERT_EQ((*d)[i * mfma.n + j], want[i * mfma.n + j])
                << "D(" << i << ", " << j << ") for probe k = " << batch[0].k;
      }
      ++checked;
    }
  }
  // Every (chip, record) pair the chip table has.
  unsigned pairs = 0;
  for (const ChipInfo &chip : getSupportedChips())
    pairs += chip.getMfmas().size();
  EXPECT_EQ(checked, pairs);
  // m16n16k32 and m32n32k16 on both chips, the two f8f6f4 shapes on gfx950.
  EXPECT_EQ(checked, 6u);
}

TEST(MfmaLayoutAgreement, ChipFormatsAreReferenceFormats) {
  // The emulator decodes a chip's fp8 operands in the formats the chip table
  // names; each must be one that Reference implements.
  for (const ChipInfo &chip : getSupportedChips()) {
    EXPECT_TRUE(parseFP8Format(chip.fp8E4M3TypeName).has_value())
        << chip.name.str();
    EXPECT_TRUE(parseFP8Format(chip.fp8E5M2TypeName).has_value())
        << chip.name.str();
  }
}

} // namespace
