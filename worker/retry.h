// Retrying a call with a doubling delay, paced by an injected clock (common/clock.h), so that
// tests drive the waits with a FakeClock instead of sleeping.
#pragma once

#include <chrono>
#include <functional>

#include "common/clock.h"

namespace onset::worker {

// What one try says about the next.
enum class TryResult {
  kDone,    // finished (well or not): stop trying
  kAgain,   // worth another try after the next delay
  kGiveUp,  // not worth another try, though it has not finished
};

struct RetryPolicy {
  std::chrono::milliseconds first_delay{250};  // the wait after the first try
  std::chrono::milliseconds max_delay{5'000};  // each wait doubles, up to this
  // Counted from the first try: no wait is begun that would end after it.
  std::chrono::milliseconds deadline{60'000};
};

// Waits for a span of the clock's monotonic time.
using WaitFn = std::function<void(std::chrono::milliseconds)>;

// Calls `attempt` until it says kDone (returns true), or it says kGiveUp or the next wait would
// end past the deadline (returns false, without waiting). Between tries calls `wait` with
// first_delay, then twice that, and so on up to max_delay; deadlines are read from `clock`.
bool RetryWithBackoff(const common::Clock& clock, const RetryPolicy& policy,
                      const std::function<TryResult()>& attempt, const WaitFn& wait);

// Blocks until `clock`'s monotonic time has advanced by `delay`, looking at it at least every
// `poll` of real time so that an injected clock that jumps is noticed. On the system clock it
// is a sleep of `delay`.
void WaitOnClock(const common::Clock& clock, std::chrono::milliseconds delay,
                 std::chrono::milliseconds poll);

}  // namespace onset::worker
