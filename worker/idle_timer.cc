#include "worker/idle_timer.h"

#include <cmath>
#include <sstream>

namespace onset::worker {

absl::StatusOr<std::chrono::milliseconds> ExitWhenIdleFromSeconds(double seconds) {
  // Written so that NaN fails too.
  if (!(seconds > 0 && seconds <= static_cast<double>(kMaxExitWhenIdle.count()))) {
    std::ostringstream got;
    got << seconds;
    return absl::InvalidArgumentError("--exit-when-idle: must be more than 0 and at most " +
                                      std::to_string(kMaxExitWhenIdle.count()) +
                                      " seconds (7 days), got " + got.str());
  }
  return std::chrono::milliseconds(static_cast<int64_t>(std::ceil(seconds * 1000)));
}

bool IdleTimer::NoJob(int running_jobs, int queued_waiting) {
  if (running_jobs > 0 || queued_waiting > 0) {
    Reset();
    return false;
  }
  last_unreachable_ = false;
  const common::Clock::MonotonicTime now = clock_.MonotonicNow();
  if (!idle_since_) idle_since_ = now;
  return now - *idle_since_ >= limit_;
}

bool IdleTimer::Unreachable(int running_jobs) {
  if (running_jobs > 0) {
    Reset();
    return false;
  }
  last_unreachable_ = true;
  const common::Clock::MonotonicTime now = clock_.MonotonicNow();
  if (!idle_since_) idle_since_ = now;
  return now - *idle_since_ >= limit_;
}

}  // namespace onset::worker
