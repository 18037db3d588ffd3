#include "analysis/convergence.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace onset::analysis {
namespace {

TEST(TokensToThresholdTest, InterpolatesLinearlyInLogTokens) {
  // 0.2 at 1M, 0.8 at 4M: 0.5 is half way in log tokens, at 2M.
  Crossing c = TokensToThreshold({{1'000'000, 0.2}, {4'000'000, 0.8}}, 0.5, Direction::kUp, 4'000'000);
  ASSERT_TRUE(c.crossed);
  EXPECT_NEAR(c.tokens, 2'000'000, 1e-3);
  // A quarter of the way: 1M * 4^0.25.
  c = TokensToThreshold({{1'000'000, 0.2}, {4'000'000, 0.8}}, 0.35, Direction::kUp, 0);
  EXPECT_NEAR(c.tokens, 1'000'000 * std::pow(4.0, 0.25), 1e-3);
}

TEST(TokensToThresholdTest, TheFirstCrossingCountsNotALaterDip) {
  Crossing c = TokensToThreshold(
      {{100, 0.0}, {200, 0.6}, {400, 0.3}, {800, 0.9}}, 0.5, Direction::kUp, 800);
  ASSERT_TRUE(c.crossed);
  EXPECT_GT(c.tokens, 100);
  EXPECT_LT(c.tokens, 200);
}

TEST(TokensToThresholdTest, ACurveThatNeverCrossesIsCensoredAtItsBudget) {
  Crossing c = TokensToThreshold({{100, 0.1}, {200, 0.4}}, 0.5, Direction::kUp, 6'000'000);
  EXPECT_FALSE(c.crossed);
  EXPECT_EQ(c.tokens, 6'000'000);
  // An unfinished cell (budget 0 here) is censored at what it has seen.
  c = TokensToThreshold({{100, 0.1}, {200, 0.4}}, 0.5, Direction::kUp, 0);
  EXPECT_FALSE(c.crossed);
  EXPECT_EQ(c.tokens, 200);
  EXPECT_FALSE(TokensToThreshold({}, 0.5, Direction::kUp, 1000).crossed);
}

TEST(TokensToThresholdTest, FirstPointAlreadyPastAndLossesGoingDown) {
  Crossing c = TokensToThreshold({{500, 0.9}, {1000, 1.0}}, 0.5, Direction::kUp, 1000);
  ASSERT_TRUE(c.crossed);
  EXPECT_EQ(c.tokens, 500);
  c = TokensToThreshold({{100, 4.0}, {10'000, 2.0}}, 3.0, Direction::kDown, 10'000);
  ASSERT_TRUE(c.crossed);
  EXPECT_NEAR(c.tokens, 1000, 1e-6);  // half way between 100 and 10,000 in log
  EXPECT_EQ(DefaultDirection("eval/heldout_loss"), Direction::kDown);
  EXPECT_EQ(DefaultDirection("niah/acc@512"), Direction::kUp);
}

TEST(TokensToThresholdTest, UnorderedDuplicatedAndNanPointsAreCleanedUp) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Crossing c = TokensToThreshold({{4000, 0.8}, {1000, 0.2}, {2000, nan}, {0, 1.0}}, 0.5,
                                 Direction::kUp, 4000);
  ASSERT_TRUE(c.crossed);
  EXPECT_NEAR(c.tokens, 2000, 1e-6);
}

TEST(MeanOverLogTokensTest, IsTheCurvesAverageOnALogAxis) {
  // Constant 0.5: the mean is 0.5. A ramp 0 -> 1 over one decade of equal log steps: 0.5.
  EXPECT_NEAR(*MeanOverLogTokens({{10, 0.5}, {1000, 0.5}}), 0.5, 1e-12);
  EXPECT_NEAR(*MeanOverLogTokens({{10, 0.0}, {100, 0.5}, {1000, 1.0}}), 0.5, 1e-12);
  // Two segments of unequal log length weigh by their length: 0 over 1 decade, 1 over 2.
  EXPECT_NEAR(*MeanOverLogTokens({{1, 0.0}, {10, 0.0}, {11, 1.0}, {1000, 1.0}}),
              (0.5 * std::log(1.1) + std::log(1000.0 / 11)) / std::log(1000.0), 1e-12);
  EXPECT_FALSE(MeanOverLogTokens({{10, 1.0}}).has_value());
  EXPECT_EQ(*FinalValue({{10, 1.0}, {30, 3.0}, {20, 2.0}}), 3.0);
}

CellSummary Cell(bool crossed, double tokens, double final_value = 0.5) {
  CellSummary c;
  c.crossing = {crossed, tokens};
  c.final_value = final_value;
  return c;
}

TEST(SummariseTest, MedianMinMaxOfSeedsWithCensoring) {
  GroupSummary g = Summarise({Cell(true, 3e6), Cell(true, 1e6), Cell(true, 2e6)});
  EXPECT_EQ(g.n, 3);
  EXPECT_EQ(g.censored, 0);
  EXPECT_TRUE(g.median.crossed);
  EXPECT_EQ(g.median.tokens, 2e6);
  EXPECT_EQ(g.min.tokens, 1e6);
  EXPECT_EQ(g.max.tokens, 3e6);

  // One of three never crossed: the median is still a number, the max is censored.
  g = Summarise({Cell(true, 1e6), Cell(false, 6e6), Cell(true, 2e6)});
  EXPECT_EQ(g.censored, 1);
  EXPECT_TRUE(g.median.crossed);
  EXPECT_EQ(g.median.tokens, 2e6);
  EXPECT_FALSE(g.max.crossed);
  EXPECT_EQ(g.max.tokens, 6e6);

  // Two of three never crossed: the median is censored, never a number.
  g = Summarise({Cell(true, 1e6), Cell(false, 6e6), Cell(false, 6e6)});
  EXPECT_FALSE(g.median.crossed);
  EXPECT_EQ(g.median.tokens, 6e6);

  // Even counts: the geometric mean of the middle two, or censored when one of them is.
  g = Summarise({Cell(true, 1e6), Cell(true, 4e6)});
  EXPECT_NEAR(g.median.tokens, 2e6, 1e-6);
  g = Summarise({Cell(true, 1e6), Cell(false, 4e6)});
  EXPECT_FALSE(g.median.crossed);
  EXPECT_EQ(*Summarise({Cell(true, 1, 0.2), Cell(true, 1, 0.4)}).final_median, 0.30000000000000004);
}

TEST(SpeedUpTest, ExactOrBoundedByCensoring) {
  SpeedUp s = SpeedUpOver({true, 1e6}, {true, 3e6});
  EXPECT_EQ(s.kind, SpeedUp::kExact);
  EXPECT_DOUBLE_EQ(s.value, 3.0);
  s = SpeedUpOver({false, 6e6}, {true, 3e6});  // never crossed by 6M: at most 0.5x
  EXPECT_EQ(s.kind, SpeedUp::kAtMost);
  EXPECT_DOUBLE_EQ(s.value, 0.5);
  s = SpeedUpOver({true, 2e6}, {false, 6e6});  // baseline never crossed: at least 3x
  EXPECT_EQ(s.kind, SpeedUp::kAtLeast);
  EXPECT_DOUBLE_EQ(s.value, 3.0);
  EXPECT_EQ(SpeedUpOver({false, 1}, {false, 1}).kind, SpeedUp::kUnknown);
}

}  // namespace
}  // namespace onset::analysis
