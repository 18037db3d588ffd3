#include "analysis/bootstrap.h"

#include <gtest/gtest.h>

namespace onset::analysis {
namespace {

Crossing E(double at) { return {Crossing::kExact, at}; }
Crossing R(double at) { return {Crossing::kRight, at}; }

// Every resample of two groups whose seeds agree has the same speed-up: the interval is that
// point.
TEST(BootstrapTest, SeedsThatAgreeGiveAPoint) {
  const SpeedUpInterval i =
      BootstrapSpeedUp({E(100), E(100), E(100)}, {E(400), E(400), E(400)}, {500, 7, 0.95});
  EXPECT_EQ(i.resamples, 500);
  EXPECT_EQ(i.lower.kind, SpeedUp::kExact);
  EXPECT_DOUBLE_EQ(i.lower.value, 4);
  EXPECT_DOUBLE_EQ(i.upper.value, 4);
  EXPECT_EQ(i.bounded, 0);
}

// The interval holds the point estimate and spans the seeds' range of ratios; with three seeds
// per side that overlap, it includes 1x.
TEST(BootstrapTest, OverlappingSeedsIncludeOne) {
  const SpeedUpInterval i =
      BootstrapSpeedUp({E(200), E(300), E(900)}, {E(250), E(400), E(800)}, {2000, 1, 0.95});
  ASSERT_EQ(i.lower.kind, SpeedUp::kExact);
  ASSERT_EQ(i.upper.kind, SpeedUp::kExact);
  EXPECT_LE(i.lower.value, 1.0);
  EXPECT_GE(i.upper.value, 1.0);
  EXPECT_GE(i.lower.value, 250.0 / 900.0);
  EXPECT_LE(i.upper.value, 800.0 / 200.0);
}

// Ten seeds per side, every group seed faster than every baseline seed by 2-4x: the interval
// excludes 1x.
TEST(BootstrapTest, SeparatedGroupsExcludeOne) {
  std::vector<Crossing> fast, slow;
  for (int s = 0; s < 10; ++s) {
    fast.push_back(E(100 + 5 * s));
    slow.push_back(E(300 + 10 * s));
  }
  const SpeedUpInterval i = BootstrapSpeedUp(fast, slow, {2000, 3, 0.95});
  EXPECT_GT(i.lower.value, 2);
  EXPECT_LT(i.upper.value, 4);
}

// The same seed gives the same interval; another seed may differ.
TEST(BootstrapTest, TheSeedMakesItReproducible) {
  const std::vector<Crossing> g = {E(200), E(300), E(900), E(350)};
  const std::vector<Crossing> b = {E(250), E(400), E(800), E(500)};
  const SpeedUpInterval x = BootstrapSpeedUp(g, b, {1000, 42, 0.95});
  const SpeedUpInterval y = BootstrapSpeedUp(g, b, {1000, 42, 0.95});
  EXPECT_EQ(x.lower.value, y.lower.value);
  EXPECT_EQ(x.upper.value, y.upper.value);
}

// A group none of whose seeds crossed: every resample is a bound, the interval's ends too.
TEST(BootstrapTest, CensoredGroupsGiveBounds) {
  const SpeedUpInterval i =
      BootstrapSpeedUp({R(1000), R(1000), R(1000)}, {E(100), E(200), E(300)}, {500, 1, 0.95});
  EXPECT_EQ(i.bounded, 500);
  EXPECT_EQ(i.lower.kind, SpeedUp::kAtMost);
  EXPECT_EQ(i.upper.kind, SpeedUp::kAtMost);
  // Both never crossed: no resample is known, nor the interval.
  const SpeedUpInterval none = BootstrapSpeedUp({R(10)}, {R(10)}, {500, 1, 0.95});
  EXPECT_EQ(none.unknown, 500);
  EXPECT_EQ(none.lower.kind, SpeedUp::kUnknown);
}

}  // namespace
}  // namespace onset::analysis
