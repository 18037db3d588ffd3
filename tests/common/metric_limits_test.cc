#include "common/metric_limits.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <limits>
#include <string>

namespace onset::common {
namespace {

using ::testing::HasSubstr;

TEST(MetricLimitsTest, TheTrainersNamesAreAllowed) {
  for (const char* name : {"train/loss", "niah/acc@512", "niah/acc_depth@0.5", "rh/score/l3h7",
                           "niah/multi-value/acc", "ablation/random_k/niah_acc_std"}) {
    EXPECT_TRUE(CheckMetricName(name).ok()) << name;
  }
}

TEST(MetricLimitsTest, EmptyLongAndOddNamesAreRefusedSayingWhy) {
  EXPECT_THAT(CheckMetricName("").message(), HasSubstr("empty"));
  const std::string huge(10 << 20, 'a');
  absl::Status s = CheckMetricName(huge);
  EXPECT_TRUE(absl::IsInvalidArgument(s));
  EXPECT_THAT(s.message(), HasSubstr("10485760 bytes, at most 256"));
  EXPECT_LT(s.message().size(), 200u);  // quotes only the start of it
  EXPECT_TRUE(CheckMetricName(std::string(256, 'a')).ok());
  EXPECT_FALSE(CheckMetricName(std::string(257, 'a')).ok());
  EXPECT_THAT(CheckMetricName("train loss").message(), HasSubstr("only ASCII letters"));
  EXPECT_FALSE(CheckMetricName("bad\xFF").ok());
  EXPECT_FALSE(CheckMetricName("new\nline").ok());
}

TEST(MetricLimitsTest, TokensLieInZeroToOneQuadrillion) {
  EXPECT_TRUE(CheckTokens(0).ok());
  EXPECT_TRUE(CheckTokens(kMaxTokens).ok());
  EXPECT_EQ(CheckTokens(-1).message(), "tokens -1: must be 0..1000000000000000");
  EXPECT_FALSE(CheckTokens(kMaxTokens + 1).ok());
  EXPECT_FALSE(CheckTokens(std::numeric_limits<int64_t>::max()).ok());
  EXPECT_FALSE(CheckTokens(std::numeric_limits<int64_t>::min()).ok());
}

}  // namespace
}  // namespace onset::common
