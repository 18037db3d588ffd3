// The trainer's stderr on its way to the coordinator: lines numbered from 1 as they arrive,
// held until sent. Bounded: while the coordinator is unreachable the oldest unsent lines are
// dropped (their numbers stay used, so a reader sees the gap) instead of growing without end.
//
// Thread-safe: the trainer's stderr reader adds, the job's run loop takes and puts back.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

#include "worker/coordinator_client.h"

namespace onset::worker {

class LogBuffer {
 public:
  explicit LogBuffer(size_t max_pending = 10'000) : max_pending_(max_pending) {}

  void Add(std::string text, int64_t at_unix_ms);
  // Up to `max` of the oldest unsent lines, removed from the buffer.
  std::vector<LogLine> Take(size_t max);
  // Returns lines whose sending failed to the front, to be sent again (still bounded).
  void PutBack(std::vector<LogLine> lines);

  size_t pending() const;
  int64_t dropped() const;  // lines dropped so far for lack of room

 private:
  void Trim();  // caller holds mu_

  const size_t max_pending_;
  mutable std::mutex mu_;
  std::deque<LogLine> pending_;  // guarded by mu_
  int64_t next_line_ = 1;        // guarded by mu_
  int64_t dropped_ = 0;          // guarded by mu_
};

}  // namespace onset::worker
