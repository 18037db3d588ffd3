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

// Measures on the injected clock how long the worker has had nothing to do: the time since the
// first of an unbroken run of calls that each brought no work while the worker ran nothing,
// either a lease answer that said "no job, and no queued cell waits for you" or a call that could
// not reach the coordinator (a worker pointed at an address where nothing answers, or whose
// coordinator has gone, would otherwise hold its node for the batch job's whole time limit).
// Anything else (a job leased or running, a queued cell waiting) breaks the run. Not
// thread-safe: the worker's loop owns it.
class IdleTimer {
 public:
  IdleTimer(std::chrono::milliseconds limit, const common::Clock& clock)
      : limit_(limit), clock_(clock) {}

  // A lease answer without a job, while `running_jobs` run here and the coordinator counts
  // `queued_waiting` cells that this worker could run later. True once the unbroken run of idle
  // answers has lasted `limit`.
  bool NoJob(int running_jobs, int queued_waiting);
  // A call (registration or lease) that could not reach the coordinator while `running_jobs`
  // run here: it continues the run when nothing runs. True once the run has lasted `limit`.
  bool Unreachable(int running_jobs);
  // Whether the latest call of the run could not reach the coordinator: the worker then leaves
  // with an error rather than as an idle worker would.
  bool last_unreachable() const { return last_unreachable_; }
  // Work: the idle time starts again from zero.
  void Reset() {
    idle_since_.reset();
    last_unreachable_ = false;
  }

  std::chrono::milliseconds limit() const { return limit_; }

 private:
  const std::chrono::milliseconds limit_;
  const common::Clock& clock_;
  std::optional<common::Clock::MonotonicTime> idle_since_;
  bool last_unreachable_ = false;
};

}  // namespace onset::worker
