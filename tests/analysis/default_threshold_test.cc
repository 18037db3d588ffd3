#include "analysis/default_threshold.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace onset::analysis {
namespace {

TEST(DefaultThresholdTest, ARateOpensAtOneHalf) {
  for (const char* rate : {"niah/acc", "niah/acc@512", "acc", "ruler/acc_multikey", "x/rate"}) {
    std::optional<DefaultThreshold> t = ChooseThreshold(rate, {});
    ASSERT_TRUE(t.has_value()) << rate;
    EXPECT_EQ(t->value, 0.5) << rate;
    EXPECT_EQ(t->why, "for a rate");
  }
}

TEST(DefaultThresholdTest, ALossOpensHalfwayBetweenTheMedianFirstAndLastValues) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Curves curves;
  curves["a"]["train/loss"] = {{1, 6.0}, {2, 4.0}, {3, 3.0}};
  curves["b"]["train/loss"] = {{1, 5.0}, {2, 3.5}};
  curves["c"]["train/loss"] = {{1, nan}, {2, 7.0}, {3, 2.0}, {4, nan}};  // NaN left out
  curves["d"]["other"] = {{1, 100.0}};                                   // another metric
  std::optional<DefaultThreshold> t = ChooseThreshold("train/loss", curves);
  ASSERT_TRUE(t.has_value());
  // Median first of {6, 5, 7} = 6, median last of {3, 3.5, 2} = 3: 4.5.
  EXPECT_EQ(t->value, 4.5);
  EXPECT_EQ(t->why, "halfway between the cells' median first and last values");
}

TEST(DefaultThresholdTest, RoundsToThreeSignificantDigitsAndNeedsAValue) {
  Curves curves;
  curves["a"]["eval/heldout_loss"] = {{1, 5.4321}, {2, 3.1234}};
  EXPECT_EQ(ChooseThreshold("eval/heldout_loss", curves)->value, 4.28);
  EXPECT_FALSE(ChooseThreshold("eval/short_loss", curves).has_value());
}

}  // namespace
}  // namespace onset::analysis
