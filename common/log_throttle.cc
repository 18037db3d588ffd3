#include "common/log_throttle.h"

namespace onset::common {

bool LogThrottle::Occurred(int64_t n, int64_t* left_out) {
  const Clock::MonotonicTime now = clock_.MonotonicNow();
  if (last_logged_ && now - *last_logged_ < interval_) {
    left_out_ += n;
    return false;
  }
  if (left_out != nullptr) *left_out = left_out_;
  left_out_ = 0;
  last_logged_ = now;
  return true;
}

bool LogThrottle::Recovered() {
  const bool was_logged = last_logged_.has_value();
  last_logged_.reset();
  left_out_ = 0;
  return was_logged;
}

}  // namespace onset::common
