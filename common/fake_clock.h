// A Clock that moves only when told to, for tests. Both clocks advance together.
#pragma once

#include <chrono>
#include <mutex>

#include "common/clock.h"

namespace onset::common {

// Thread-safe: tests may advance it while the code under test reads it from other threads.
class FakeClock final : public Clock {
 public:
  // Starts at an arbitrary fixed point: monotonic 1000 s after its epoch, wall 2026-01-01 UTC.
  FakeClock()
      : monotonic_(std::chrono::seconds(1000)),
        wall_(std::chrono::milliseconds(int64_t{1'767'225'600'000})) {}

  MonotonicTime MonotonicNow() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return monotonic_;
  }
  WallTime WallNow() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return wall_;
  }

  void Advance(std::chrono::milliseconds d) {
    std::lock_guard<std::mutex> lock(mu_);
    monotonic_ += d;
    wall_ += d;
  }

 private:
  mutable std::mutex mu_;
  MonotonicTime monotonic_;
  WallTime wall_;
};

}  // namespace onset::common
