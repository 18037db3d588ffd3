#include "cli/views/heads.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace onset::cli {
namespace {

using ::testing::HasSubstr;

TEST(HeadsTest, MapsScoresAtAnEvalPointAndWhenEachHeadFirstRetrieved) {
  std::map<std::string, std::vector<std::pair<int64_t, double>>> metrics;
  metrics["rh/score/l3h0"] = {{1000, 0.0}, {2000, 0.3}, {4000, 0.9}};
  metrics["rh/score/l3h1"] = {{1000, 0.05}, {2000, 0.05}, {4000, 0.12}};
  metrics["rh/score/l1h0"] = {{1000, 0.0}, {2000, 0.0}, {4000, 0.0}};
  metrics["rh/max_full"] = {{1000, 0.05}, {2000, 0.3}, {4000, 0.9}};  // not a head: ignored
  metrics["train/loss"] = {{500, 3.0}};

  HeadMap last = BuildHeadMap(metrics, 0);
  EXPECT_EQ(last.tokens, 4000);
  EXPECT_EQ(last.eval_points, (std::vector<int64_t>{1000, 2000, 4000}));
  EXPECT_EQ(last.score.size(), 3u);
  EXPECT_DOUBLE_EQ(last.score.at({3, 0}), 0.9);
  EXPECT_EQ(last.first_retrieval.at({3, 0}), 2000);
  EXPECT_EQ(last.first_retrieval.at({3, 1}), 4000);
  EXPECT_FALSE(last.first_retrieval.count({1, 0}));

  HeadMap earlier = BuildHeadMap(metrics, 3000);  // the last eval point at or before 3000
  EXPECT_EQ(earlier.tokens, 2000);
  EXPECT_DOUBLE_EQ(earlier.score.at({3, 0}), 0.3);

  const std::string text = RenderHeadMap(last);
  EXPECT_THAT(text, HasSubstr("0.90*"));
  EXPECT_THAT(text, HasSubstr("l3h0@2K l3h1@4K"));
  EXPECT_THAT(RenderHeadMap(BuildHeadMap({}, 0)), HasSubstr("no retrieval-head scores"));
}

}  // namespace
}  // namespace onset::cli
