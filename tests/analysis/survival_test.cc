// Kaplan-Meier on hand-made censored crossings whose estimate is worked out by hand.
#include "analysis/survival.h"

#include <gtest/gtest.h>

#include <cmath>

namespace onset::analysis {
namespace {

Crossing Exact(double at) { return {Crossing::kExact, at}; }
Crossing Left(double at) { return {Crossing::kLeft, at}; }
Crossing Right(double at) { return {Crossing::kRight, at}; }

TEST(KaplanMeierTest, EqualBudgetsGiveTheEmpiricalFractions) {
  // Five seeds, three crossed by a 6M budget: S = 4/5, 3/5, 2/5 after each crossing.
  const Emergence e = KaplanMeier({Right(6e6), Exact(2e6), Exact(1e6), Right(6e6), Exact(4e6)});
  EXPECT_EQ(e.n, 5);
  EXPECT_EQ(e.crossed, 3);
  EXPECT_EQ(e.censored, 2);
  ASSERT_EQ(e.steps.size(), 3u);
  EXPECT_EQ(e.steps[0].at_risk, 5);
  EXPECT_DOUBLE_EQ(e.steps[2].emerged, 0.6);
  EXPECT_EQ(e.median.kind, Crossing::kExact);  // S falls to 2/5 at 4M
  EXPECT_DOUBLE_EQ(e.median.at, 4e6);
  EXPECT_DOUBLE_EQ(e.EmergedBy(0.5e6), 0.0);
  EXPECT_DOUBLE_EQ(e.EmergedBy(1.5e6), 0.2);
  EXPECT_DOUBLE_EQ(e.EmergedBy(9e6), 0.6);
}

TEST(KaplanMeierTest, ACellCensoredEarlyLeavesTheRiskSet) {
  // A run still going at 1M (censored there), crossings at 2M and 3M, one censored at 6M.
  // At 2M three cells are at risk: S = 2/3; at 3M two: S = 2/3 * 1/2 = 1/3 -> median 3M.
  // (Counting the unfinished cell as "not crossed" would say 2/4 and a median at the plateau.)
  const Emergence e = KaplanMeier({Right(1e6), Exact(2e6), Exact(3e6), Right(6e6)});
  ASSERT_EQ(e.steps.size(), 2u);
  EXPECT_EQ(e.steps[0].at_risk, 3);
  EXPECT_NEAR(e.steps[0].emerged, 1.0 / 3, 1e-12);
  EXPECT_EQ(e.steps[1].at_risk, 2);
  EXPECT_NEAR(e.steps[1].emerged, 2.0 / 3, 1e-12);
  EXPECT_EQ(e.median.kind, Crossing::kExact);
  EXPECT_DOUBLE_EQ(e.median.at, 3e6);
}

TEST(KaplanMeierTest, FewerThanHalfCrossedIsRightCensoredAtTheBudget) {
  const Emergence e = KaplanMeier({Exact(2e6), Right(6e6), Right(6e6)});
  EXPECT_EQ(e.crossed, 1);
  EXPECT_EQ(e.median.kind, Crossing::kRight);
  EXPECT_DOUBLE_EQ(e.median.at, 6e6);
  const Emergence none = KaplanMeier({Right(6e6), Right(5e6)});
  EXPECT_EQ(none.median.kind, Crossing::kRight);
  EXPECT_DOUBLE_EQ(none.median.at, 6e6);
  EXPECT_TRUE(none.steps.empty());
  EXPECT_EQ(KaplanMeier({}).median.kind, Crossing::kUnknown);
}

TEST(KaplanMeierTest, ExactlyHalfTakesTheGeometricMeanOrABound) {
  // Four seeds, crossings at 1M and 4M: S = 1/2 from 4M on. With two more crossings at 8M
  // and 9M the median is the geometric mean of 4M and 8M; with the others censored at 6M it
  // is beyond the geometric mean of 4M and 6M.
  const Emergence later = KaplanMeier({Exact(1e6), Exact(4e6), Exact(8e6), Exact(9e6)});
  EXPECT_EQ(later.median.kind, Crossing::kExact);
  EXPECT_NEAR(later.median.at, std::sqrt(4e6 * 8e6), 1e-3);
  const Emergence censored = KaplanMeier({Exact(1e6), Exact(4e6), Right(6e6), Right(6e6)});
  EXPECT_EQ(censored.median.kind, Crossing::kRight);
  EXPECT_NEAR(censored.median.at, std::sqrt(4e6 * 6e6), 1e-3);
}

TEST(KaplanMeierTest, LeftCensoredCrossingsGiveAnUpperBound) {
  // Two seeds already past the threshold at the first eval point (250K), one at 1M.
  const Emergence e = KaplanMeier({Left(2.5e5), Left(2.5e5), Exact(1e6)});
  EXPECT_EQ(e.median.kind, Crossing::kLeft);
  EXPECT_DOUBLE_EQ(e.median.at, 2.5e5);
  EXPECT_EQ(e.crossed, 3);
}

TEST(KaplanMeierTest, CountsCrossedByEachEvalPoint) {
  const std::vector<Crossing> c = {Exact(2e6), Left(5e5), Right(1e6), Right(6e6)};
  CrossedBy at = CountCrossedBy(c, 2.5e5);  // before the left-censored cell's first point
  EXPECT_EQ(at.crossed, 0);
  EXPECT_EQ(at.observed, 3);
  at = CountCrossedBy(c, 5e5);
  EXPECT_EQ(at.crossed, 1);
  EXPECT_EQ(at.observed, 4);
  at = CountCrossedBy(c, 3e6);  // the cell censored at 1M is no longer observed
  EXPECT_EQ(at.crossed, 2);
  EXPECT_EQ(at.observed, 3);
}

}  // namespace
}  // namespace onset::analysis
