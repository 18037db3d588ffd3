#include "model/evaluation/length_summary.h"

#include <gtest/gtest.h>

namespace onset::model {
namespace {

// The headline is the mean of the per-length values within the training length, each length
// weighing the same; longer lengths are summarised apart.
TEST(LengthSummaryTest, WithinAndBeyondTheTrainingLength) {
  const LengthSummary s = SummariseLengths({{64, 0.5}, {128, 1.0}, {256, 0.25}, {512, 0.0}}, 128);
  EXPECT_DOUBLE_EQ(*s.within, 0.75);
  EXPECT_DOUBLE_EQ(*s.beyond, 0.125);
  EXPECT_FALSE(SummariseLengths({{64, 0.5}}, 128).beyond);
  EXPECT_FALSE(SummariseLengths({{256, 0.5}}, 128).within);
  EXPECT_FALSE(SummariseLengths({}, 128).within);
}

}  // namespace
}  // namespace onset::model
