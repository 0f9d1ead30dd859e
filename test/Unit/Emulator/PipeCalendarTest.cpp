//===- PipeCalendarTest.cpp - The shared pipes of the timing model --------===//
//
// PipeCalendar is how waves that share a SIMD or a CU's pipe take turns
// (WaveTimeline.h): a reservation takes the earliest free interval at or
// after the time asked, so a wave emulated later fills the gaps of an
// earlier one. Each expectation is worked out by hand.
//
//===----------------------------------------------------------------------===//

#include "WaveTimeline.h"

#include "gtest/gtest.h"

using namespace mlir::mlafp8::emu;

namespace {

TEST(PipeCalendar, FreePipeStartsWhenAsked) {
  PipeCalendar c;
  EXPECT_EQ(c.reserve(10, 4), 10u);
  // Back to back with the first: no gap.
  EXPECT_EQ(c.reserve(14, 4), 14u);
  // Asked inside the busy [10, 18): after it.
  EXPECT_EQ(c.reserve(12, 4), 18u);
}

TEST(PipeCalendar, LaterReservationsFillGaps) {
  PipeCalendar c;
  EXPECT_EQ(c.reserve(0, 4), 0u);   // [0, 4)
  EXPECT_EQ(c.reserve(20, 4), 20u); // [20, 24)
  // A gap [4, 20) of 16: a 16-cycle request fits exactly.
  EXPECT_EQ(c.reserve(2, 16), 4u);
  // Now [0, 24) is busy: the next goes after it, not into a gap.
  EXPECT_EQ(c.reserve(0, 1), 24u);
}

TEST(PipeCalendar, TooShortGapsAreSkipped) {
  PipeCalendar c;
  EXPECT_EQ(c.reserve(0, 4), 0u);  // [0, 4)
  EXPECT_EQ(c.reserve(6, 4), 6u);  // [6, 10): a 2-cycle gap at 4
  EXPECT_EQ(c.reserve(12, 4), 12u); // [12, 16): a 2-cycle gap at 10
  // Three cycles fit in neither gap.
  EXPECT_EQ(c.reserve(0, 3), 16u);
  // Two fit in the first.
  EXPECT_EQ(c.reserve(0, 2), 4u);
  // And in the second, asked from inside the busy [6, 10).
  EXPECT_EQ(c.reserve(7, 2), 10u);
  // Everything up to 19 is busy now.
  EXPECT_EQ(c.reserve(0, 1), 19u);
}

TEST(PipeCalendar, ZeroLengthTakesNothing) {
  PipeCalendar c;
  EXPECT_EQ(c.reserve(5, 4), 5u);
  EXPECT_EQ(c.reserve(6, 0), 6u);
  EXPECT_EQ(c.reserve(0, 5), 0u);
  EXPECT_EQ(c.reserve(0, 1), 9u);
}

} // namespace
