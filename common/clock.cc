#include "common/clock.h"

namespace onset::common {
namespace {

class RealClock final : public Clock {
 public:
  MonotonicTime MonotonicNow() const override { return std::chrono::steady_clock::now(); }
  WallTime WallNow() const override { return std::chrono::system_clock::now(); }
};

}  // namespace

int64_t Clock::WallUnixMs() const {
  return std::chrono::duration_cast<std::chrono::milliseconds>(WallNow().time_since_epoch())
      .count();
}

const Clock& SystemClock() {
  static const RealClock* const clock = new RealClock();
  return *clock;
}

}  // namespace onset::common
