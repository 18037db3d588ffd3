#include "common/clock.h"

#include <gtest/gtest.h>

#include "common/fake_clock.h"

namespace onset::common {
namespace {

using std::chrono::milliseconds;

TEST(FakeClockTest, AdvancesBothClocksTogether) {
  FakeClock clock;
  const auto mono = clock.MonotonicNow();
  const int64_t wall = clock.WallUnixMs();
  EXPECT_EQ(wall, 1'767'225'600'000);
  clock.Advance(milliseconds(1500));
  EXPECT_EQ(clock.MonotonicNow() - mono, milliseconds(1500));
  EXPECT_EQ(clock.WallUnixMs() - wall, 1500);
}

TEST(SystemClockTest, WallTimeIsPlausibleAndMonotonicDoesNotGoBack) {
  const Clock& clock = SystemClock();
  EXPECT_GT(clock.WallUnixMs(), int64_t{1'600'000'000'000});  // after 2020
  const auto a = clock.MonotonicNow();
  const auto b = clock.MonotonicNow();
  EXPECT_LE(a, b);
}

}  // namespace
}  // namespace onset::common
