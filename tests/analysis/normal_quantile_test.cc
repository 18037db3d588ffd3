#include "analysis/normal_quantile.h"

#include <gtest/gtest.h>

#include <cmath>

namespace onset::analysis {
namespace {

// Reference values: the standard normal's quantiles to 16 digits (e.g. R's qnorm).
TEST(NormalQuantileTest, KnownQuantiles) {
  EXPECT_NEAR(NormalQuantile(0.975), 1.959963984540054, 1e-14);
  EXPECT_NEAR(NormalQuantile(0.995), 2.5758293035489004, 1e-13);
  EXPECT_NEAR(NormalQuantile(0.001), -3.090232306167813, 1e-13);
  EXPECT_NEAR(NormalQuantile(1e-10), -6.361340902404056, 1e-11);
  EXPECT_NEAR(NormalQuantile(0.5), 0, 1e-15);
  EXPECT_NEAR(NormalQuantile(0.3), -0.5244005127080407, 1e-14);
  EXPECT_TRUE(std::isnan(NormalQuantile(0)));
  EXPECT_TRUE(std::isnan(NormalQuantile(1)));
  EXPECT_NEAR(TwoSidedZ(0.95), 1.959963984540054, 1e-14);
  EXPECT_NEAR(TwoSidedZ(0.9), 1.6448536269514722, 1e-14);
}

TEST(NormalQuantileTest, ChiSquareOneTail) {
  EXPECT_NEAR(ChiSquare1Tail(3.841458820694124), 0.05, 1e-14);
  EXPECT_NEAR(ChiSquare1Tail(6.6348966010212145), 0.01, 1e-14);
  EXPECT_EQ(ChiSquare1Tail(0), 1);
  EXPECT_EQ(ChiSquare1Tail(-1), 1);
}

}  // namespace
}  // namespace onset::analysis
