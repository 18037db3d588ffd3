// Whether to log a recurring failure now: the first time at once, then at most once per
// interval, counting the occurrences left out in between, so that a failure repeating on every
// sweep or request (a read-only database under a thousand leases) costs a line a minute, not a
// line each.
//
// Thread-safety: none; the caller serialises (the lease manager calls it under its mutex).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>

#include "common/clock.h"

namespace onset::common {

class LogThrottle {
 public:
  LogThrottle(const Clock& clock, std::chrono::milliseconds interval)
      : clock_(clock), interval_(interval) {}

  // Records `n` occurrences; true when the caller should log now, and then `*left_out` (when
  // given) receives how many occurrences were not logged since the previous line.
  bool Occurred(int64_t n = 1, int64_t* left_out = nullptr);
  // The failure stopped: true when it had been logged (the caller may say it recovered); the
  // next occurrence is logged at once again.
  bool Recovered();

 private:
  const Clock& clock_;
  const std::chrono::milliseconds interval_;
  std::optional<Clock::MonotonicTime> last_logged_;
  int64_t left_out_ = 0;
};

}  // namespace onset::common
