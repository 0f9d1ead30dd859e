//===- MfmaLayoutTest.cpp - The MFMA records describe whole layouts -------===//
//
// Each record's layout functions are checked against the explicit formulas
// of ISA-NOTES.md §4 for the shapes it names, and for being bijections: every
// (row, k) of an operand and every (row, col) of the accumulator is held by
// exactly one (lane, slot). That the emulator's MFMA semantics agree with the
// records is EmulatorMfmaLayoutTest's job.
//
//===----------------------------------------------------------------------===//

#include "mla-fp8/Hardware/Chip.h"
#include "mla-fp8/Hardware/Mfma.h"

#include "gtest/gtest.h"

#include <set>
#include <utility>

using namespace mlir::mlafp8;

TEST(MfmaLayout, OperandsAreBijections) {
  for (const MfmaLayout &mfma : getMfmaLayouts()) {
    SCOPED_TRACE(mfma.mnemonic.str());
    EXPECT_EQ(mfma.getOperandBytesPerLane() * kMfmaWaveSize, mfma.m * mfma.k);
    std::set<std::pair<unsigned, unsigned>> seen;
    for (unsigned lane = 0; lane < kMfmaWaveSize; ++lane)
      for (unsigned byte = 0; byte < mfma.getOperandBytesPerLane(); ++byte) {
        OperandElement e = mfma.getOperandElement(lane, byte);
        ASSERT_LT(e.row, mfma.m);
        ASSERT_LT(e.k, mfma.k);
        EXPECT_TRUE(seen.insert({e.row, e.k}).second);
        OperandSlot slot = mfma.locateOperand(e.row, e.k);
        EXPECT_EQ(slot.lane, lane);
        EXPECT_EQ(slot.byte, byte);
      }
  }
}

TEST(MfmaLayout, AccumulatorsAreBijections) {
  for (const MfmaLayout &mfma : getMfmaLayouts()) {
    SCOPED_TRACE(mfma.mnemonic.str());
    std::set<std::pair<unsigned, unsigned>> seen;
    for (unsigned lane = 0; lane < kMfmaWaveSize; ++lane)
      for (unsigned e = 0; e < mfma.getAccumulatorsPerLane(); ++e) {
        AccumulatorElement c = mfma.getAccumulatorElement(lane, e);
        ASSERT_LT(c.row, mfma.m);
        ASSERT_LT(c.col, mfma.n);
        EXPECT_TRUE(seen.insert({c.row, c.col}).second);
      }
    EXPECT_EQ(seen.size(), size_t(mfma.m) * mfma.n);
  }
}

// The formulas as ISA-NOTES.md writes them, for the dense fp8 shapes.
TEST(MfmaLayout, DenseShapesMatchTheISA) {
  const MfmaLayout *small = lookupMfma("m16n16k32");
  const MfmaLayout *big = lookupMfma("m32n32k16");
  ASSERT_TRUE(small && big);
  EXPECT_EQ(small->getAccumulatorsPerLane(), 4u);
  EXPECT_EQ(big->getAccumulatorsPerLane(), 16u);
  for (unsigned lane = 0; lane < 64; ++lane)
    for (unsigned byte = 0; byte < 8; ++byte) {
      // 16x16x32: i = L mod 16, k = 8 floor(L/16) + byte.
      EXPECT_EQ(small->getOperandElement(lane, byte).row, lane % 16);
      EXPECT_EQ(small->getOperandElement(lane, byte).k, 8 * (lane / 16) + byte);
      // 32x32x16: i = L mod 32, k = 8 floor(L/32) + byte.
      EXPECT_EQ(big->getOperandElement(lane, byte).row, lane % 32);
      EXPECT_EQ(big->getOperandElement(lane, byte).k, 8 * (lane / 32) + byte);
    }
  for (unsigned lane = 0; lane < 64; ++lane) {
    // 16x16 output: i = 4 floor(L/16) + r, j = L mod 16.
    for (unsigned r = 0; r < 4; ++r) {
      EXPECT_EQ(small->getAccumulatorElement(lane, r).row, 4 * (lane / 16) + r);
      EXPECT_EQ(small->getAccumulatorElement(lane, r).col, lane % 16);
    }
    // 32x32 output: i = 8 floor(r/4) + 4 floor(L/32) + r mod 4, j = L mod 32.
    for (unsigned r = 0; r < 16; ++r) {
      EXPECT_EQ(big->getAccumulatorElement(lane, r).row,
                8 * (r / 4) + 4 * (lane / 32) + r % 4);
      EXPECT_EQ(big->getAccumulatorElement(lane, r).col, lane % 32);
    }
  }
}

TEST(MfmaLayout, Lookup) {
  EXPECT_EQ(lookupMfma("m16n16k32"), lookupMfma(16, 16, 32));
  EXPECT_EQ(lookupMfma("m16n16k31"), nullptr);
  EXPECT_EQ(lookupMfma(16, 16, 32, /*blockScaled=*/true), nullptr);
  for (const MfmaLayout &mfma : getMfmaLayouts())
    if (!mfma.blockScaled)
      EXPECT_EQ(lookupMfma(mfma.shapeName), &mfma);
}

// gfx950's f8f6f4 shapes with fp8 operands: two runs of 16 k per lane.
TEST(MfmaLayout, F8F6F4ShapesMatchTheISA) {
  const MfmaLayout *small = lookupMfma("m16n16k128");
  const MfmaLayout *big = lookupMfma("m32n32k64");
  ASSERT_TRUE(small && big);
  EXPECT_EQ(small->getOperandBytesPerLane(), 32u);
  EXPECT_EQ(big->getOperandBytesPerLane(), 32u);
  for (unsigned lane = 0; lane < 64; ++lane)
    for (unsigned t = 0; t < 32; ++t) {
      // 16x16x128: k = 64 floor(t/16) + 16 floor(L/16) + t mod 16.
      EXPECT_EQ(small->getOperandElement(lane, t).row, lane % 16);
      EXPECT_EQ(small->getOperandElement(lane, t).k,
                64 * (t / 16) + 16 * (lane / 16) + t % 16);
      // 32x32x64: k = 32 floor(t/16) + 16 floor(L/32) + t mod 16.
      EXPECT_EQ(big->getOperandElement(lane, t).row, lane % 32);
      EXPECT_EQ(big->getOperandElement(lane, t).k,
                32 * (t / 16) + 16 * (lane / 32) + t % 16);
    }
  const ChipInfo &gfx942 = *lookupChip("gfx942");
  const ChipInfo &gfx950 = *lookupChip("gfx950");
  EXPECT_EQ(gfx942.findFP8Mfma(16, 16, 128), nullptr);
  EXPECT_EQ(gfx950.findFP8Mfma(16, 16, 128), small);
}
