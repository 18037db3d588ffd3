#include "coordinator/dashboard/accept_backoff.h"

#include <algorithm>

namespace onset::coordinator {

AcceptBackoff::Step AcceptBackoff::Failed() {
  pause_ = pause_.count() == 0 ? min_ : std::min(max_, pause_ * 2);
  ++unlogged_;
  Step step{pause_, std::nullopt};
  const common::Clock::MonotonicTime now = clock_.MonotonicNow();
  if (!last_log_ || now - *last_log_ >= log_interval_) {
    step.log_failures = unlogged_;
    unlogged_ = 0;
    last_log_ = now;
  }
  return step;
}

}  // namespace onset::coordinator
