// The log of failed database writes, rate-limited: when the database cannot be written (a
// read-only file, a full disk, another program holding the lock) every heartbeat and metrics
// report fails, and one line each would bury everything else in the log.
//
// The first failure is logged at once (spdlog, error level), later ones at most once per
// `interval`, each such line counting the failures left out since the previous one; the first
// success after logged failures says that writes work again and how many failed in all.
//
// Thread-safety: none; the writer thread of a WriteQueue owns one.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "common/clock.h"
#include "common/log_throttle.h"

namespace onset::db {

class WriteFailureLog {
 public:
  explicit WriteFailureLog(std::chrono::milliseconds interval,
                           const common::Clock& clock = common::SystemClock())
      : throttle_(clock, interval) {}

  // A write failed; `what` says which and why ("database write failed: ... (running '...')").
  void Failed(const std::string& what);
  // A write transaction committed.
  void Succeeded();

 private:
  common::LogThrottle throttle_;  // when to log, and what was left out
  int64_t failed_ = 0;            // failures since the last success
};

}  // namespace onset::db
