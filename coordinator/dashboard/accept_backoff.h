// What a server's accept loop does after accept() fails, e.g. with EMFILE when the process is
// out of descriptors: retrying at once would spin a core and, with a log line per failure, fill
// the disk, while the cause persists until connections close. So: pause, doubling from `min` to
// `max` while failures continue, and log at most one line per `log_interval`, counting the
// failures it stands for. A success resets the pause.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <optional>

#include "common/clock.h"

namespace onset::coordinator {

class AcceptBackoff {
 public:
  AcceptBackoff(const common::Clock& clock, std::chrono::milliseconds min,
                std::chrono::milliseconds max, std::chrono::milliseconds log_interval)
      : clock_(clock), min_(min), max_(std::max(min, max)), log_interval_(log_interval) {}

  struct Step {
    std::chrono::milliseconds pause;  // wait this long before accepting again
    // Set when a log line is due: the failures since the previous line, this one included.
    std::optional<int64_t> log_failures;
  };
  // Not thread-safe: one accept loop calls it.
  Step Failed();
  void Succeeded() { pause_ = std::chrono::milliseconds(0); }

 private:
  const common::Clock& clock_;
  const std::chrono::milliseconds min_, max_, log_interval_;
  std::chrono::milliseconds pause_{0};
  int64_t unlogged_ = 0;
  std::optional<common::Clock::MonotonicTime> last_log_;
};

}  // namespace onset::coordinator
