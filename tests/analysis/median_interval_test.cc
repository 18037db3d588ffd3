#include "analysis/median_interval.h"

#include <gtest/gtest.h>

namespace onset::analysis {
namespace {

Crossing E(double at) { return {Crossing::kExact, at}; }
Crossing L(double at) { return {Crossing::kLeft, at}; }
Crossing R(double at) { return {Crossing::kRight, at}; }

// Ten cells crossing at 1..10, none censored. By hand (Greenwood on log(-log), z = 1.96): the
// band's lower edge is 0.473 at t = 1 (S = 0.9), its upper edge first at or below 1/2 at t = 8
// (0.4747, S = 0.2; 0.5779 at t = 7).
TEST(MedianIntervalTest, TenExactCrossings) {
  std::vector<Crossing> cells;
  for (int t = 1; t <= 10; ++t) cells.push_back(E(t));
  const MedianInterval i = KaplanMeierMedianInterval(cells, 0.95);
  EXPECT_EQ(i.lower.kind, Crossing::kExact);
  EXPECT_EQ(i.lower.at, 1);
  EXPECT_EQ(i.upper.kind, Crossing::kExact);
  EXPECT_EQ(i.upper.at, 8);
  // A lower level narrows it: at 50% (z = 0.674) the band's edges are S's within a few tenths.
  const MedianInterval narrow = KaplanMeierMedianInterval(cells, 0.5);
  EXPECT_GE(narrow.lower.at, i.lower.at);
  EXPECT_LE(narrow.upper.at, i.upper.at);
  EXPECT_LT(narrow.upper.at - narrow.lower.at, i.upper.at - i.lower.at);
}

// Three seeds, the demo's size: one crossing in the middle of the budget and two censored
// there. Fewer than half crossed, so neither the median nor the interval's upper end is known:
// both are bounds at the budget.
TEST(MedianIntervalTest, FewCrossingsLeaveTheUpperEndABound) {
  const MedianInterval i = KaplanMeierMedianInterval({E(500), R(1000), R(1000)}, 0.95);
  EXPECT_EQ(i.upper.kind, Crossing::kRight);
  EXPECT_EQ(i.upper.at, 1000);
}

// With three seeds that all crossed, the interval spans from the first crossing to the last:
// three seeds cannot place the median more precisely than that.
TEST(MedianIntervalTest, ThreeSeedsSpanTheirCrossings) {
  const MedianInterval i = KaplanMeierMedianInterval({E(300), E(500), E(900)}, 0.95);
  EXPECT_EQ(i.lower.at, 300);
  EXPECT_EQ(i.upper.at, 900);
}

// A left-censored crossing is an event at its bound; an end there is "<= bound".
TEST(MedianIntervalTest, AnEndOnALeftCensoredCrossingIsABound) {
  const MedianInterval i = KaplanMeierMedianInterval({L(100), E(500), E(900)}, 0.95);
  EXPECT_EQ(i.lower.kind, Crossing::kLeft);
  EXPECT_EQ(i.lower.at, 100);
}

TEST(MedianIntervalTest, NoCellsNoInterval) {
  const MedianInterval i = KaplanMeierMedianInterval({{Crossing::kUnknown, 0}}, 0.95);
  EXPECT_EQ(i.lower.kind, Crossing::kUnknown);
  EXPECT_EQ(i.upper.kind, Crossing::kUnknown);
  // Every cell censored: nothing crossed, both ends beyond what was observed.
  const MedianInterval none = KaplanMeierMedianInterval({R(10), R(20)}, 0.95);
  EXPECT_EQ(none.lower.kind, Crossing::kRight);
  EXPECT_EQ(none.lower.at, 20);
  EXPECT_EQ(none.upper.kind, Crossing::kRight);
}

}  // namespace
}  // namespace onset::analysis
