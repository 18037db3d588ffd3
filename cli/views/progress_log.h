// Progress off a terminal (a log file, a pipe, CI): which of `onset run`'s progress lines to
// print. A line every poll would fill a log with hundreds of near-identical lines per cell, so
// a line is printed when a cell changes state (the study summary before the first " | "
// differs) and otherwise at most every `every_ms`. Pure: the caller passes the time.
#pragma once

#include <cstdint>
#include <string>

namespace onset::cli {

class ProgressLog {
 public:
  explicit ProgressLog(int64_t every_ms = 10'000) : every_ms_(every_ms) {}

  // `line` as of `now_ms` (a monotonic clock): the text to print, "line\n" or "".
  std::string Take(const std::string& line, int64_t now_ms);

 private:
  const int64_t every_ms_;
  bool printed_any_ = false;
  std::string printed_;  // the last line printed
  int64_t printed_at_ms_ = 0;
};

}  // namespace onset::cli
