#include "worker/retry.h"

#include <algorithm>
#include <thread>

namespace onset::worker {

bool RetryWithBackoff(const common::Clock& clock, const RetryPolicy& policy,
                      const std::function<TryResult()>& attempt, const WaitFn& wait) {
  const common::Clock::MonotonicTime give_up = clock.MonotonicNow() + policy.deadline;
  for (std::chrono::milliseconds delay = policy.first_delay;;
       delay = std::min(delay * 2, policy.max_delay)) {
    switch (attempt()) {
      case TryResult::kDone:
        return true;
      case TryResult::kGiveUp:
        return false;
      case TryResult::kAgain:
        break;
    }
    if (clock.MonotonicNow() + delay > give_up) return false;
    wait(delay);
  }
}

void WaitOnClock(const common::Clock& clock, std::chrono::milliseconds delay,
                 std::chrono::milliseconds poll) {
  const common::Clock::MonotonicTime until = clock.MonotonicNow() + delay;
  const std::chrono::milliseconds step = std::max(poll, std::chrono::milliseconds(1));
  for (auto now = clock.MonotonicNow(); now < until; now = clock.MonotonicNow()) {
    std::this_thread::sleep_for(
        std::min<common::Clock::MonotonicTime::duration>(until - now, step));
  }
}

}  // namespace onset::worker
