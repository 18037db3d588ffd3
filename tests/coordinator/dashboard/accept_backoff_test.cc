#include "coordinator/dashboard/accept_backoff.h"

#include <gtest/gtest.h>

#include "common/fake_clock.h"

namespace onset::coordinator {
namespace {

using std::chrono::milliseconds;

TEST(AcceptBackoffTest, PausesDoubleUpToTheMaximumAndASuccessResetsThem) {
  common::FakeClock clock;
  AcceptBackoff backoff(clock, milliseconds(50), milliseconds(500), milliseconds(10'000));
  std::vector<int64_t> pauses;
  for (int i = 0; i < 7; ++i) pauses.push_back(backoff.Failed().pause.count());
  EXPECT_EQ(pauses, (std::vector<int64_t>{50, 100, 200, 400, 500, 500, 500}));
  backoff.Succeeded();
  EXPECT_EQ(backoff.Failed().pause, milliseconds(50));
}

// A failure that persists (out of descriptors) logs one line per interval, not one per failure.
TEST(AcceptBackoffTest, LogsOncePerIntervalCountingTheFailures) {
  common::FakeClock clock;
  AcceptBackoff backoff(clock, milliseconds(50), milliseconds(500), milliseconds(10'000));
  EXPECT_EQ(backoff.Failed().log_failures, 1);  // the first one at once
  int lines = 0;
  for (int i = 0; i < 1000; ++i) {
    clock.Advance(milliseconds(5));
    if (backoff.Failed().log_failures) ++lines;
  }
  EXPECT_EQ(lines, 0);  // 5 s: still within the interval
  clock.Advance(milliseconds(5'000));
  EXPECT_EQ(backoff.Failed().log_failures, 1001);
  backoff.Succeeded();  // a success between does not reset the interval
  EXPECT_EQ(backoff.Failed().log_failures, std::nullopt);
  clock.Advance(milliseconds(10'000));
  EXPECT_EQ(backoff.Failed().log_failures, 2);
}

}  // namespace
}  // namespace onset::coordinator
