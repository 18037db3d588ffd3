// When a worker has had no work for long enough to leave by itself (onset-worker
// --exit-when-idle), so that batch jobs of workers end once a study has run instead of holding
// their nodes until their time limit.
#pragma once

#include <chrono>
#include <optional>

#include "absl/status/statusor.h"
#include "common/clock.h"

namespace onset::worker {

// The longest --exit-when-idle: 7 days.
inline constexpr std::chrono::seconds kMaxExitWhenIdle{7 * 24 * 3600};

// --exit-when-idle SECONDS as a duration (rounded up to whole milliseconds). InvalidArgument
// "--exit-when-idle: ..." unless 0 < seconds <= kMaxExitWhenIdle.
absl::StatusOr<std::chrono::milliseconds> ExitWhenIdleFromSeconds(double seconds);

// Measures on the injected clock how long the coordinator has had no work for the worker: the
// time since the first of an unbroken run of lease answers that each said "no job, and no queued
// cell waits for you" while the worker ran nothing. Anything else (a job leased or running, a
// queued cell waiting, a call that failed) breaks the run. Not thread-safe: the worker's loop
// owns it.
class IdleTimer {
 public:
  IdleTimer(std::chrono::milliseconds limit, const common::Clock& clock)
      : limit_(limit), clock_(clock) {}

  // A lease answer without a job, while `running_jobs` run here and the coordinator counts
  // `queued_waiting` cells that this worker could run later. True once the unbroken run of idle
  // answers has lasted `limit`.
  bool NoJob(int running_jobs, int queued_waiting);
  // Work, or a coordinator that could not be asked: the idle time starts again from zero.
  void Reset() { idle_since_.reset(); }

  std::chrono::milliseconds limit() const { return limit_; }

 private:
  const std::chrono::milliseconds limit_;
  const common::Clock& clock_;
  std::optional<common::Clock::MonotonicTime> idle_since_;
};

}  // namespace onset::worker
