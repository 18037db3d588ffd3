#include "common/latency_histogram.h"

#include <algorithm>
#include <cmath>

namespace onset::common {

const std::vector<double>& DefaultLatencyBounds() {
  static const std::vector<double> kBounds = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                              0.1,    0.25,  0.5,    1,     2.5,  5,     10};
  return kBounds;
}

LatencyHistogram::LatencyHistogram(const std::vector<double>& bounds)
    : bounds_(bounds), buckets_(new std::atomic<uint64_t>[bounds.size() + 1]) {
  for (size_t i = 0; i <= bounds_.size(); ++i) buckets_[i].store(0, std::memory_order_relaxed);
}

void LatencyHistogram::Observe(double seconds) {
  if (!(seconds > 0)) seconds = 0;  // NaN too
  const size_t bucket = static_cast<size_t>(
      std::lower_bound(bounds_.begin(), bounds_.end(), seconds) - bounds_.begin());
  buckets_[bucket].fetch_add(1, std::memory_order_relaxed);
  // Nanoseconds in an integer: exact, and atomic without a compare-and-swap loop. 2^64 ns is
  // 584 years of summed latency.
  sum_ns_.fetch_add(static_cast<uint64_t>(std::llround(std::min(seconds, 1e9) * 1e9)),
                    std::memory_order_relaxed);
}

LatencyHistogram::Snapshot LatencyHistogram::Read() const {
  Snapshot out;
  out.bounds = bounds_;
  uint64_t running = 0;
  for (size_t i = 0; i < bounds_.size(); ++i) {
    running += buckets_[i].load(std::memory_order_relaxed);
    out.cumulative.push_back(running);
  }
  out.count = running + buckets_[bounds_.size()].load(std::memory_order_relaxed);
  out.sum = static_cast<double>(sum_ns_.load(std::memory_order_relaxed)) / 1e9;
  return out;
}

}  // namespace onset::common
