#include "common/log_throttle.h"

#include <gtest/gtest.h>

#include "common/fake_clock.h"

namespace onset::common {
namespace {

TEST(LogThrottleTest, LogsTheFirstAtOnceThenOncePerIntervalCountingTheRest) {
  FakeClock clock;
  LogThrottle throttle(clock, std::chrono::seconds(60));
  int64_t left_out = -1;
  EXPECT_TRUE(throttle.Occurred(1, &left_out));
  EXPECT_EQ(left_out, 0);
  for (int i = 0; i < 100; ++i) EXPECT_FALSE(throttle.Occurred(10));
  clock.Advance(std::chrono::seconds(59));
  EXPECT_FALSE(throttle.Occurred());
  clock.Advance(std::chrono::seconds(1));
  EXPECT_TRUE(throttle.Occurred(1, &left_out));
  EXPECT_EQ(left_out, 1001);
  EXPECT_FALSE(throttle.Occurred());
}

TEST(LogThrottleTest, ARecoveryIsReportedOnceAndTheNextFailureLogsAtOnce) {
  FakeClock clock;
  LogThrottle throttle(clock, std::chrono::seconds(60));
  EXPECT_FALSE(throttle.Recovered());  // nothing was logged
  EXPECT_TRUE(throttle.Occurred());
  EXPECT_FALSE(throttle.Occurred());
  EXPECT_TRUE(throttle.Recovered());
  EXPECT_FALSE(throttle.Recovered());
  int64_t left_out = -1;
  EXPECT_TRUE(throttle.Occurred(1, &left_out));
  EXPECT_EQ(left_out, 0);
}

}  // namespace
}  // namespace onset::common
