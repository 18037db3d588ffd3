#include "analysis/logrank.h"

#include <gtest/gtest.h>

#include <cmath>

namespace onset::analysis {
namespace {

Crossing E(double at) { return {Crossing::kExact, at}; }
Crossing R(double at) { return {Crossing::kRight, at}; }

// By hand: at t=1, 4 at risk (2 and 2), one event in a: E = 1/2, V = 2*2*1*3/(16*3) = 1/4; at
// t=2, 3 at risk (1 and 2), one in a: E = 1/3, V = 1*2*1*2/(9*2) = 2/9; t=3 and 4 have no one of
// a at risk. O - E = 2 - 5/6 = 7/6, V = 17/36: statistic 49/17, p = erfc(sqrt(49/34)).
TEST(LogRankTest, AHandComputedCase) {
  const LogRank t = LogRankTest({E(1), E(2)}, {E(3), E(4)});
  ASSERT_TRUE(t.defined);
  EXPECT_NEAR(t.statistic, 49.0 / 17.0, 1e-12);
  EXPECT_NEAR(t.p_value, std::erfc(std::sqrt(49.0 / 34.0)), 1e-12);
  EXPECT_NEAR(t.p_value, 0.08955507441364256, 1e-12);
  EXPECT_EQ(t.observed_a, 2);
  EXPECT_NEAR(t.expected_a, 5.0 / 6.0, 1e-12);
}

// Censored cells leave the risk set after the events at their time.
TEST(LogRankTest, CensoredCellsCountAsAtRiskAtTheirTime) {
  // t=2: a has 2 at risk (one censored at 2), b has 1: E = 1 * 2/3.
  const LogRank t = LogRankTest({E(2), R(2)}, {E(5)});
  ASSERT_TRUE(t.defined);
  EXPECT_NEAR(t.expected_a, 2.0 / 3.0, 1e-12);
}

// The same curves: nothing to tell them apart.
TEST(LogRankTest, IdenticalGroupsGiveNoEvidence) {
  const LogRank t = LogRankTest({E(1), E(2), E(3)}, {E(1), E(2), E(3)});
  ASSERT_TRUE(t.defined);
  EXPECT_NEAR(t.statistic, 0, 1e-12);
  EXPECT_NEAR(t.p_value, 1, 1e-12);
}

TEST(LogRankTest, NoCrossingIsNoTest) {
  EXPECT_FALSE(LogRankTest({R(10)}, {R(10), R(5)}).defined);
  EXPECT_FALSE(LogRankTest({}, {}).defined);
}

}  // namespace
}  // namespace onset::analysis
