// The trainer's stderr on its way to the coordinator: lines numbered from 1 as they arrive,
// held until sent. Bounded in lines and bytes: when the trainer writes faster than the lines are
// relayed (or while the coordinator cannot be reached) the oldest unsent lines are dropped and
// counted (their numbers stay used, so a reader sees the gap) instead of growing without end.
//
// Thread-safe: the trainer's stderr reader adds, the job's run loop takes and puts back.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "common/mutex.h"
#include "worker/coordinator_client.h"

namespace onset::worker {

class LogBuffer {
 public:
  // As many lines as the coordinator keeps of an attempt, so that a burst loses none of those
  // it would keep; the byte bound caps the memory a burst of long lines takes.
  static constexpr size_t kDefaultMaxLines = 20'000;
  static constexpr size_t kDefaultMaxBytes = 32 << 20;

  explicit LogBuffer(size_t max_lines = kDefaultMaxLines, size_t max_bytes = kDefaultMaxBytes)
      : max_lines_(max_lines), max_bytes_(max_bytes) {}

  void Add(std::string text, int64_t at_unix_ms);
  // The oldest unsent lines, removed from the buffer: up to `max_lines`, and no more than
  // `max_bytes` of text unless the first line alone is longer.
  std::vector<LogLine> Take(size_t max_lines, size_t max_bytes = SIZE_MAX);
  // Returns lines whose sending failed to the front, to be sent again (still bounded).
  void PutBack(std::vector<LogLine> lines);

  size_t pending() const;
  int64_t dropped() const;  // lines dropped so far for lack of room

  size_t max_lines() const { return max_lines_; }
  size_t max_bytes() const { return max_bytes_; }

 private:
  void Trim() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const size_t max_lines_;
  const size_t max_bytes_;
  mutable common::Mutex mu_;
  std::deque<LogLine> pending_ ABSL_GUARDED_BY(mu_);
  size_t pending_bytes_ ABSL_GUARDED_BY(mu_) = 0;  // the text of pending_
  int64_t next_line_ ABSL_GUARDED_BY(mu_) = 1;
  int64_t dropped_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace onset::worker
