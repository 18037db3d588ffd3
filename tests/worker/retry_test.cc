#include "worker/retry.h"

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/fake_clock.h"

namespace onset::worker {
namespace {

using std::chrono::milliseconds;
using ::testing::ElementsAre;

// Runs RetryWithBackoff on a FakeClock whose waits advance it, recording each wait.
class RetryTest : public ::testing::Test {
 protected:
  bool Retry(const RetryPolicy& policy, const std::function<TryResult()>& attempt) {
    return RetryWithBackoff(clock_, policy, attempt, [&](milliseconds delay) {
      waits_.push_back(delay);
      clock_.Advance(delay);
    });
  }

  common::FakeClock clock_;
  std::vector<milliseconds> waits_;
};

TEST_F(RetryTest, ASuccessfulFirstTryDoesNotWait) {
  int tries = 0;
  EXPECT_TRUE(Retry({}, [&] {
    ++tries;
    return TryResult::kDone;
  }));
  EXPECT_EQ(tries, 1);
  EXPECT_TRUE(waits_.empty());
}

TEST_F(RetryTest, TheDelayDoublesUpToItsMaximum) {
  int tries = 0;
  EXPECT_TRUE(Retry({milliseconds(250), milliseconds(5'000), milliseconds(600'000)},
                    [&] { return ++tries == 9 ? TryResult::kDone : TryResult::kAgain; }));
  EXPECT_EQ(tries, 9);
  EXPECT_THAT(waits_, ElementsAre(milliseconds(250), milliseconds(500), milliseconds(1'000),
                                  milliseconds(2'000), milliseconds(4'000), milliseconds(5'000),
                                  milliseconds(5'000), milliseconds(5'000)));
}

TEST_F(RetryTest, GivesUpRatherThanWaitPastTheDeadline) {
  // 250 + 500 + 1000 = 1750 ms of waits fit in 2 s; the next (2000 ms) would end past it.
  int tries = 0;
  EXPECT_FALSE(Retry({milliseconds(250), milliseconds(5'000), milliseconds(2'000)}, [&] {
    ++tries;
    return TryResult::kAgain;
  }));
  EXPECT_EQ(tries, 4);
  EXPECT_THAT(waits_, ElementsAre(milliseconds(250), milliseconds(500), milliseconds(1'000)));
}

TEST_F(RetryTest, TheDeadlineCountsTheTimeTheTriesTake) {
  // Each try takes 1 s of the clock: after the second (2.25 s in) a wait of 500 ms would end
  // past the 2.5 s deadline.
  int tries = 0;
  EXPECT_FALSE(Retry({milliseconds(250), milliseconds(5'000), milliseconds(2'500)}, [&] {
    ++tries;
    clock_.Advance(milliseconds(1'000));
    return TryResult::kAgain;
  }));
  EXPECT_EQ(tries, 2);
  EXPECT_THAT(waits_, ElementsAre(milliseconds(250)));
}

TEST_F(RetryTest, ATryThatGivesUpEndsTheRetryAtOnce) {
  int tries = 0;
  EXPECT_FALSE(Retry({}, [&] { return ++tries == 3 ? TryResult::kGiveUp : TryResult::kAgain; }));
  EXPECT_EQ(tries, 3);
  EXPECT_THAT(waits_, ElementsAre(milliseconds(250), milliseconds(500)));
}

TEST_F(RetryTest, ANoDeadlinePolicyTriesOnce) {
  int tries = 0;
  EXPECT_FALSE(Retry({milliseconds(250), milliseconds(5'000), milliseconds(0)}, [&] {
    ++tries;
    return TryResult::kAgain;
  }));
  EXPECT_EQ(tries, 1);
  EXPECT_TRUE(waits_.empty());
}

TEST(WaitOnClockTest, ReturnsOnceTheInjectedClockHasAdvanced) {
  // The clock is already past the end: no real time is waited for.
  common::FakeClock clock;
  WaitOnClock(clock, milliseconds(0), milliseconds(10));
  // A clock that jumps while it waits is noticed at the next look. It keeps jumping until the
  // wait returns: a single jump could come before the wait reads the clock, which would then
  // wait for a minute that never passes.
  std::atomic<bool> returned{false};
  std::thread advance([&] {
    while (!returned) {
      clock.Advance(milliseconds(10'000));
      std::this_thread::sleep_for(milliseconds(1));
    }
  });
  WaitOnClock(clock, milliseconds(60'000), milliseconds(1));
  returned = true;
  advance.join();
  EXPECT_GE(clock.MonotonicNow(), common::FakeClock().MonotonicNow() + milliseconds(60'000));
}

}  // namespace
}  // namespace onset::worker
