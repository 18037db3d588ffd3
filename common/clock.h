// Time as a dependency. Components that reason about time (leases, retries, timestamps) take a
// `const Clock&` instead of calling std::chrono clocks, so tests can drive time with FakeClock.
//
// Durations and deadlines use the monotonic clock; what is stored or shown to people (database
// rows, logs) uses wall time as unix milliseconds.
#pragma once

#include <chrono>
#include <cstdint>

namespace onset::common {

class Clock {
 public:
  using MonotonicTime = std::chrono::steady_clock::time_point;
  using WallTime = std::chrono::system_clock::time_point;

  virtual ~Clock() = default;

  // Never goes backwards; unrelated to calendar time. Thread-safe in every implementation.
  virtual MonotonicTime MonotonicNow() const = 0;
  // Calendar time; may jump (NTP, manual changes). Thread-safe in every implementation.
  virtual WallTime WallNow() const = 0;

  // WallNow() as milliseconds since the unix epoch, the unit of every stored timestamp.
  int64_t WallUnixMs() const;
};

// The process's real clocks. Stateless; the returned object lives forever.
const Clock& SystemClock();

}  // namespace onset::common
