#include "analysis/convergence.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace onset::analysis {
namespace {

TEST(TokensToThresholdTest, InterpolatesLinearlyInLogTokens) {
  // 0.2 at 1M, 0.8 at 4M: 0.5 is half way in log tokens, at 2M.
  Crossing c =
      TokensToThreshold({{1'000'000, 0.2}, {4'000'000, 0.8}}, 0.5, Direction::kUp, 4'000'000);
  ASSERT_EQ(c.kind, Crossing::kExact);
  EXPECT_NEAR(c.at, 2'000'000, 1e-3);
  // A quarter of the way: 1M * 4^0.25.
  c = TokensToThreshold({{1'000'000, 0.2}, {4'000'000, 0.8}}, 0.35, Direction::kUp, 0);
  EXPECT_NEAR(c.at, 1'000'000 * std::pow(4.0, 0.25), 1e-3);
}

TEST(TokensToThresholdTest, TheFirstCrossingCountsNotALaterDip) {
  Crossing c =
      TokensToThreshold({{100, 0.0}, {200, 0.6}, {400, 0.3}, {800, 0.9}}, 0.5, Direction::kUp, 800);
  ASSERT_EQ(c.kind, Crossing::kExact);
  EXPECT_GT(c.at, 100);
  EXPECT_LT(c.at, 200);
}

TEST(TokensToThresholdTest, ACurveThatNeverCrossesIsCensoredAtItsBudget) {
  Crossing c = TokensToThreshold({{100, 0.1}, {200, 0.4}}, 0.5, Direction::kUp, 6'000'000);
  EXPECT_EQ(c.kind, Crossing::kRight);
  EXPECT_FALSE(c.reached());
  EXPECT_EQ(c.at, 6'000'000);
  // An unfinished cell (budget 0 here) is censored at what it has seen.
  c = TokensToThreshold({{100, 0.1}, {200, 0.4}}, 0.5, Direction::kUp, 0);
  EXPECT_EQ(c.kind, Crossing::kRight);
  EXPECT_EQ(c.at, 200);
  EXPECT_EQ(TokensToThreshold({}, 0.5, Direction::kUp, 1000).kind, Crossing::kRight);
}

TEST(TokensToThresholdTest, AFirstPointAlreadyPastIsLeftCensoredNotACrossing) {
  // Crossed somewhere in (0, 250K]: only the bound is known.
  Crossing c =
      TokensToThreshold({{250'000, 0.9}, {1'000'000, 1.0}}, 0.5, Direction::kUp, 1'000'000);
  EXPECT_EQ(c.kind, Crossing::kLeft);
  EXPECT_TRUE(c.reached());
  EXPECT_EQ(c.at, 250'000);
  // Points before the first positive-tokens one do not count; a loss already below it too.
  c = TokensToThreshold({{0, 0.0}, {500, 0.6}, {1000, 0.7}}, 0.5, Direction::kUp, 1000);
  EXPECT_EQ(c.kind, Crossing::kLeft);
  EXPECT_EQ(c.at, 500);
  c = TokensToThreshold({{100, 2.5}, {1000, 2.0}}, 3.0, Direction::kDown, 1000);
  EXPECT_EQ(c.kind, Crossing::kLeft);
  EXPECT_EQ(c.at, 100);
}

TEST(TokensToThresholdTest, LossesGoingDown) {
  Crossing c = TokensToThreshold({{100, 4.0}, {10'000, 2.0}}, 3.0, Direction::kDown, 10'000);
  ASSERT_EQ(c.kind, Crossing::kExact);
  EXPECT_NEAR(c.at, 1000, 1e-6);  // half way between 100 and 10,000 in log
  EXPECT_EQ(DefaultDirection("eval/heldout_loss"), Direction::kDown);
  EXPECT_EQ(DefaultDirection("niah/acc@512"), Direction::kUp);
}

TEST(TokensToThresholdTest, UnorderedDuplicatedAndNanPointsAreCleanedUp) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Crossing c = TokensToThreshold({{4000, 0.8}, {1000, 0.2}, {2000, nan}, {0, 1.0}}, 0.5,
                                 Direction::kUp, 4000);
  ASSERT_EQ(c.kind, Crossing::kExact);
  EXPECT_NEAR(c.at, 2000, 1e-6);
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

constexpr Crossing::Kind kExact = Crossing::kExact;
constexpr Crossing::Kind kLeft = Crossing::kLeft;
constexpr Crossing::Kind kRight = Crossing::kRight;
constexpr Crossing::Kind kUnknown = Crossing::kUnknown;

CellSummary Cell(Crossing::Kind kind, double at, double final_value = 0.5) {
  CellSummary c;
  c.crossing = {kind, at};
  c.final_value = final_value;
  return c;
}

TEST(SummariseTest, MedianMinMaxOfSeedsWithRightCensoring) {
  GroupSummary g = Summarise({Cell(kExact, 3e6), Cell(kExact, 1e6), Cell(kExact, 2e6)});
  EXPECT_EQ(g.n, 3);
  EXPECT_EQ(g.censored, 0);
  EXPECT_EQ(g.left_censored, 0);
  EXPECT_EQ(g.median.kind, kExact);
  EXPECT_EQ(g.median.at, 2e6);
  EXPECT_EQ(g.min.at, 1e6);
  EXPECT_EQ(g.max.at, 3e6);

  // One of three never crossed: the median is still a number, the max is censored.
  g = Summarise({Cell(kExact, 1e6), Cell(kRight, 6e6), Cell(kExact, 2e6)});
  EXPECT_EQ(g.censored, 1);
  EXPECT_EQ(g.median.kind, kExact);
  EXPECT_EQ(g.median.at, 2e6);
  EXPECT_EQ(g.max.kind, kRight);
  EXPECT_EQ(g.max.at, 6e6);

  // Two of three never crossed: the median is censored, never a number.
  g = Summarise({Cell(kExact, 1e6), Cell(kRight, 6e6), Cell(kRight, 6e6)});
  EXPECT_EQ(g.median.kind, kRight);
  EXPECT_EQ(g.median.at, 6e6);

  // Even counts: the geometric mean of the middle two, a bound when one of them is censored
  // (one seed at 1M, the other past 4M: the median is past sqrt(1M * 4M) = 2M).
  g = Summarise({Cell(kExact, 1e6), Cell(kExact, 4e6)});
  EXPECT_EQ(g.median.kind, kExact);
  EXPECT_NEAR(g.median.at, 2e6, 1e-6);
  g = Summarise({Cell(kExact, 1e6), Cell(kRight, 4e6)});
  EXPECT_EQ(g.median.kind, kRight);
  EXPECT_NEAR(g.median.at, 2e6, 1e-6);
  EXPECT_EQ(*Summarise({Cell(kExact, 1, 0.2), Cell(kExact, 1, 0.4)}).final_median,
            0.30000000000000004);
}

TEST(SummariseTest, LeftCensoredCellsCountBelowEveryCrossingPastTheirBound) {
  // Two seeds already past the threshold at the first eval point (250K), one crossing at 1M:
  // the median and the min are "<= 250K", the max a number.
  GroupSummary g = Summarise({Cell(kLeft, 250e3), Cell(kExact, 1e6), Cell(kLeft, 250e3)});
  EXPECT_EQ(g.n, 3);
  EXPECT_EQ(g.left_censored, 2);
  EXPECT_EQ(g.censored, 0);
  EXPECT_EQ(g.median.kind, kLeft);
  EXPECT_EQ(g.median.at, 250e3);
  EXPECT_EQ(g.min.kind, kLeft);
  EXPECT_EQ(g.max.kind, kExact);
  EXPECT_EQ(g.max.at, 1e6);

  // One of three left-censored: the median is the middle crossing.
  g = Summarise({Cell(kLeft, 250e3), Cell(kExact, 1e6), Cell(kExact, 2e6)});
  EXPECT_EQ(g.median.kind, kExact);
  EXPECT_EQ(g.median.at, 1e6);
  EXPECT_EQ(g.min.kind, kLeft);
  EXPECT_EQ(g.min.at, 250e3);

  // Even counts: one seed by 250K, one at 1M: the median is at most sqrt(250K * 1M) = 500K.
  g = Summarise({Cell(kLeft, 250e3), Cell(kExact, 1e6)});
  EXPECT_EQ(g.median.kind, kLeft);
  EXPECT_NEAR(g.median.at, 500e3, 1e-6);

  // Every seed left-censored: so is everything.
  g = Summarise({Cell(kLeft, 250e3), Cell(kLeft, 250e3)});
  EXPECT_EQ(g.median.kind, kLeft);
  EXPECT_EQ(g.max.kind, kLeft);
  EXPECT_NEAR(g.max.at, 250e3, 1e-6);
}

TEST(SummariseTest, BothCensoringsAndInterleavedBoundsStayBounds) {
  // One seed by its first eval point, one never: the median could be anything.
  GroupSummary g = Summarise({Cell(kLeft, 250e3), Cell(kRight, 8e6)});
  EXPECT_EQ(g.left_censored, 1);
  EXPECT_EQ(g.censored, 1);
  EXPECT_EQ(g.median.kind, kUnknown);
  EXPECT_EQ(g.min.kind, kLeft);
  EXPECT_EQ(g.min.at, 250e3);
  EXPECT_EQ(g.max.kind, kRight);
  EXPECT_EQ(g.max.at, 8e6);

  // Three: left, exact, right: the middle one is the crossing.
  g = Summarise({Cell(kRight, 8e6), Cell(kLeft, 250e3), Cell(kExact, 1e6)});
  EXPECT_EQ(g.median.kind, kExact);
  EXPECT_EQ(g.median.at, 1e6);

  // A running seed censored at 500K (what it has seen) may still cross before the finished
  // seed's 2M: the min is only "<= 2M", and the max past 2M.
  g = Summarise({Cell(kExact, 2e6), Cell(kRight, 500e3)});
  EXPECT_EQ(g.min.kind, kLeft);
  EXPECT_EQ(g.min.at, 2e6);
  EXPECT_EQ(g.max.kind, kRight);
  EXPECT_EQ(g.max.at, 2e6);

  // An exact crossing below a left-censored cell's bound (another eval schedule): the min is
  // not that crossing, since the left-censored cell may have crossed before it.
  g = Summarise({Cell(kExact, 500e3), Cell(kLeft, 1e6), Cell(kExact, 3e6)});
  EXPECT_EQ(g.min.kind, kLeft);
  EXPECT_EQ(g.min.at, 500e3);
  EXPECT_EQ(g.median.kind, kLeft);  // in [500K, 1M]: reported by its upper end
  EXPECT_EQ(g.median.at, 1e6);
  EXPECT_EQ(g.max.kind, kExact);
  EXPECT_EQ(g.max.at, 3e6);
}

TEST(SpeedUpTest, EveryCombinationOfCensoring) {
  struct Case {
    Crossing::Kind group, baseline;
    SpeedUp::Kind want;
  };
  // convergence.h's table, row by row: group 1M, baseline 3M, so a bound is 3x.
  const Case cases[] = {
      {kExact, kExact, SpeedUp::kExact},     {kExact, kLeft, SpeedUp::kAtMost},
      {kExact, kRight, SpeedUp::kAtLeast},   {kExact, kUnknown, SpeedUp::kUnknown},
      {kLeft, kExact, SpeedUp::kAtLeast},    {kLeft, kLeft, SpeedUp::kUnknown},
      {kLeft, kRight, SpeedUp::kAtLeast},    {kLeft, kUnknown, SpeedUp::kUnknown},
      {kRight, kExact, SpeedUp::kAtMost},    {kRight, kLeft, SpeedUp::kAtMost},
      {kRight, kRight, SpeedUp::kUnknown},   {kRight, kUnknown, SpeedUp::kUnknown},
      {kUnknown, kExact, SpeedUp::kUnknown}, {kUnknown, kLeft, SpeedUp::kUnknown},
      {kUnknown, kRight, SpeedUp::kUnknown}, {kUnknown, kUnknown, SpeedUp::kUnknown},
  };
  for (const Case& c : cases) {
    const SpeedUp s = SpeedUpOver({c.group, 1e6}, {c.baseline, 3e6});
    EXPECT_EQ(s.kind, c.want) << "group kind " << c.group << ", baseline kind " << c.baseline;
    if (s.kind != SpeedUp::kUnknown) {
      EXPECT_DOUBLE_EQ(s.value, 3.0);
    }
  }
}

TEST(SpeedUpTest, ABoundReadsTheRightWay) {
  // A group by its first eval point, 250K, against a baseline crossing at 2M: at least 8x.
  SpeedUp s = SpeedUpOver({kLeft, 250e3}, {kExact, 2e6});
  EXPECT_EQ(s.kind, SpeedUp::kAtLeast);
  EXPECT_DOUBLE_EQ(s.value, 8.0);
  // A baseline by its first eval point, 250K, against a group crossing at 1M: at most 0.25x.
  s = SpeedUpOver({kExact, 1e6}, {kLeft, 250e3});
  EXPECT_EQ(s.kind, SpeedUp::kAtMost);
  EXPECT_DOUBLE_EQ(s.value, 0.25);
  s = SpeedUpOver({kRight, 6e6}, {kExact, 3e6});  // never crossed by 6M: at most 0.5x
  EXPECT_EQ(s.kind, SpeedUp::kAtMost);
  EXPECT_DOUBLE_EQ(s.value, 0.5);
}

}  // namespace
}  // namespace onset::analysis
