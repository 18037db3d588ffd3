#include "analysis/power_law.h"

#include <gtest/gtest.h>

#include <cmath>

namespace onset::analysis {
namespace {

std::vector<Point> Curve(double E, double B, double beta, double D0, double noise) {
  std::vector<Point> points;
  for (int i = 0; i < 12; ++i) {
    const double D = 1e5 * std::pow(2.0, i);  // 100K .. 200M
    // Deterministic zero-mean "noise": alternating signs, varying size.
    const double e = noise * ((i % 2) ? 1.0 : -1.0) * (0.5 + 0.5 * ((i * 7) % 5) / 4.0);
    points.push_back({static_cast<int64_t>(D), E + B * std::pow(D / D0, -beta) + e});
  }
  return points;
}

TEST(PowerLawTest, RecoversExactParameters) {
  std::string problem;
  // Written at the fit's own D0 (the geometric mean of the tokens) to compare B directly.
  const double D0 = 1e5 * std::pow(2.0, 5.5);
  auto fit = FitPowerLaw(Curve(1.7, 0.8, 0.35, D0, 0.0), 0, &problem);
  ASSERT_TRUE(fit.has_value()) << problem;
  EXPECT_NEAR(fit->D0, D0, 1e-6 * D0);
  EXPECT_NEAR(fit->E, 1.7, 1e-6);
  EXPECT_NEAR(fit->B, 0.8, 1e-6);
  EXPECT_NEAR(fit->beta, 0.35, 1e-6);
  EXPECT_LT(fit->rmse, 1e-9);
  EXPECT_EQ(fit->points, 12);
}

TEST(PowerLawTest, NoisyCurvesLandWithinTheirStandardErrors) {
  std::string problem;
  const double D0 = 1e5 * std::pow(2.0, 5.5);
  auto fit = FitPowerLaw(Curve(2.0, 1.2, 0.5, D0, 0.01), 0, &problem);
  ASSERT_TRUE(fit.has_value()) << problem;
  EXPECT_GT(fit->beta_se, 0);
  EXPECT_LT(std::abs(fit->E - 2.0), 4 * fit->E_se + 1e-3);
  EXPECT_LT(std::abs(fit->beta - 0.5), 4 * fit->beta_se + 1e-3);
  EXPECT_LT(std::abs(fit->B - 1.2), 4 * fit->B_se + 1e-3);
  EXPECT_NEAR(fit->rmse, 0.0075, 0.005);
}

TEST(PowerLawTest, TooFewPointsOrTooEarlyOnesAreRefused) {
  std::string problem;
  EXPECT_FALSE(FitPowerLaw({{1000, 3.0}, {1000, 2.9}, {2000, 2.5}}, 0, &problem).has_value());
  EXPECT_EQ(problem, "needs 3 or more points at 3 or more token counts, has 3 at 2");
  auto points = Curve(1.7, 0.8, 0.35, 1e6, 0);
  EXPECT_FALSE(FitPowerLaw(points, 60'000'000, &problem).has_value());  // only 2 left
  auto three = FitPowerLaw({{1000, 3.0}, {2000, 2.5}, {4000, 2.2}}, 0, &problem);
  ASSERT_TRUE(three.has_value());
  EXPECT_TRUE(std::isnan(three->beta_se));  // an exact fit has no error estimate
}

}  // namespace
}  // namespace onset::analysis
