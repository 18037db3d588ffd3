#include "model/evaluation/head_ablation.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

namespace onset::model {
namespace {

int Count(const std::vector<int>& heads, const std::vector<char>& kinds, char kind) {
  return static_cast<int>(
      std::count_if(heads.begin(), heads.end(), [&](int h) { return kinds[h] == kind; }));
}

TEST(HeadAblationTest, BaselinesAvoidTheTopKAndMatchItsLayerMix) {
  // 3 S-layer heads then 3 F-layer heads, twice: 12 heads.
  const std::vector<char> kinds = {'S', 'S', 'S', 'F', 'F', 'F', 'S', 'S', 'S', 'F', 'F', 'F'};
  const std::vector<double> scores = {0.1, 0.0, 0.3, 0.9, 0.2, 0.05, 0.0, 0.4, 0.0, 0.8, 0.0, 0.01};
  const AblationPlan plan = PlanAblation(scores, kinds, 3, 20, 7);
  EXPECT_EQ(plan.top, (std::vector<int>{3, 7, 9}));  // 0.9, 0.8, 0.4
  EXPECT_TRUE(plan.note.empty());
  EXPECT_TRUE(plan.same_mix);
  ASSERT_EQ(plan.baselines.size(), 20u);
  std::set<std::vector<int>> distinct;
  for (const std::vector<int>& draw : plan.baselines) {
    ASSERT_EQ(draw.size(), 3u);
    EXPECT_EQ(std::set<int>(draw.begin(), draw.end()).size(), 3u);  // no head twice
    for (int h : draw) {
      EXPECT_FALSE(std::count(plan.top.begin(), plan.top.end(), h)) << "top-K head " << h;
    }
    EXPECT_EQ(Count(draw, kinds, 'F'), 2);  // the top K: two F heads, one S head
    EXPECT_EQ(Count(draw, kinds, 'S'), 1);
    distinct.insert(draw);
  }
  EXPECT_GT(distinct.size(), 5u);  // real draws, not one set repeated
}

TEST(HeadAblationTest, SeedsGiveDifferentDrawsAndTheSameSeedTheSame) {
  const std::vector<char> kinds(16, 'F');
  std::vector<double> scores(16, 0.0);
  scores[5] = 1.0;
  const AblationPlan a = PlanAblation(scores, kinds, 2, 5, 1),
                     b = PlanAblation(scores, kinds, 2, 5, 1);
  const AblationPlan c = PlanAblation(scores, kinds, 2, 5, 2);
  EXPECT_EQ(a.baselines, b.baselines);
  EXPECT_NE(a.baselines, c.baselines);
}

// Two F heads, both in the top 2: no F head is left, so the draws come from all other heads
// (here the D layer's), and the plan says so.
TEST(HeadAblationTest, AnyMixBaselineWhenALayerTypeRunsOut) {
  const std::vector<char> kinds = {'F', 'F', 'D', 'D', 'D'};
  const AblationPlan plan = PlanAblation({0.9, 0.8, 0.1, 0.0, 0.0}, kinds, 2, 5, 3);
  EXPECT_EQ(plan.top, (std::vector<int>{0, 1}));
  EXPECT_FALSE(plan.same_mix);
  EXPECT_NE(plan.note.find("2 F-layer heads"), std::string::npos) << plan.note;
  ASSERT_EQ(plan.baselines.size(), 5u);
  for (const std::vector<int>& draw : plan.baselines) {
    EXPECT_EQ(draw.size(), 2u);
    EXPECT_EQ(Count(draw, kinds, 'D'), 2);
  }
  // A whole model of two heads: nothing outside the top 2, no baseline at all.
  const AblationPlan none = PlanAblation({0.5, 0.1}, {'F', 'D'}, 2, 5, 3);
  EXPECT_TRUE(none.baselines.empty());
  EXPECT_NE(none.note.find("no baseline"), std::string::npos) << none.note;
}

TEST(HeadAblationTest, TopHeadsOfOneLayerType) {
  const std::vector<char> kinds = {'F', 'F', 'D', 'D', 'S', 'F'};
  const std::vector<double> scores = {0.1, 0.5, 0.9, 0.0, 0.3, 0.5};
  EXPECT_EQ(TopHeadsOf(scores, kinds, "F", 2), (std::vector<int>{1, 5}));  // tie: lower first
  EXPECT_EQ(TopHeadsOf(scores, kinds, "SLD", 2), (std::vector<int>{2, 4}));
  EXPECT_EQ(TopHeadsOf(scores, kinds, "L", 2), (std::vector<int>{}));
  EXPECT_EQ(TopHeadsOf(scores, kinds, "F", 9), (std::vector<int>{0, 1, 5}));  // clamped
}

}  // namespace
}  // namespace onset::model
