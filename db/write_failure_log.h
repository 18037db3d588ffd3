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
#include <functional>
#include <optional>
#include <string>

namespace onset::db {

class WriteFailureLog {
 public:
  using Now = std::function<std::chrono::steady_clock::time_point()>;

  explicit WriteFailureLog(
      std::chrono::milliseconds interval, Now now = [] { return std::chrono::steady_clock::now(); })
      : interval_(interval), now_(std::move(now)) {}

  // A write failed; `what` says which and why ("database write failed: ... (running '...')").
  void Failed(const std::string& what);
  // A write transaction committed.
  void Succeeded();

 private:
  const std::chrono::milliseconds interval_;
  const Now now_;
  std::optional<std::chrono::steady_clock::time_point> last_logged_;  // set once one was logged
  int64_t left_out_ = 0;  // failures since the last logged line, not logged
  int64_t failed_ = 0;    // failures since the last success
};

}  // namespace onset::db
