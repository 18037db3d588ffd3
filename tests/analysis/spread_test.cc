#include "analysis/spread.h"

#include <gtest/gtest.h>

namespace onset::analysis {
namespace {

TEST(SpreadTest, MeanSampleSdAndRange) {
  const std::optional<Spread> s = SpreadOf({2, 4, 4, 4, 5, 5, 7, 9});
  ASSERT_TRUE(s);
  EXPECT_EQ(s->n, 8);
  EXPECT_DOUBLE_EQ(s->mean, 5);
  EXPECT_NEAR(s->sd, 2.138089935299395, 1e-12);  // sqrt(32 / 7)
  EXPECT_EQ(s->min, 2);
  EXPECT_EQ(s->max, 9);
  EXPECT_EQ(SpreadOf({3})->sd, 0);
  EXPECT_FALSE(SpreadOf({}));
}

}  // namespace
}  // namespace onset::analysis
