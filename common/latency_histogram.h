// A histogram of durations with fixed bucket bounds, kept the way Prometheus exposes one: a
// count per bucket, the sum and the count. Observing is lock-free (relaxed atomics), so the
// writer's thread and every RPC can record into one without waiting on a scrape. A Read() while
// observations go on may miss the ones in flight, as any scrape of a live process does; each
// bucket, the sum and the count are each exact once they settle.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

namespace onset::common {

// Upper bounds in seconds from 0.5 ms to 10 s, about three per decade: the range of a database
// commit and of a unary RPC.
const std::vector<double>& DefaultLatencyBounds();

class LatencyHistogram {
 public:
  // `bounds`: ascending upper bounds in seconds; +Inf is implied after the last.
  explicit LatencyHistogram(const std::vector<double>& bounds = DefaultLatencyBounds());
  LatencyHistogram(const LatencyHistogram&) = delete;
  LatencyHistogram& operator=(const LatencyHistogram&) = delete;

  // Counts one duration (negative ones as 0).
  void Observe(double seconds);

  struct Snapshot {
    std::vector<double> bounds;
    std::vector<uint64_t> cumulative;  // observations <= bounds[i]; bounds.size() entries
    uint64_t count = 0;                // all observations (the +Inf bucket)
    double sum = 0;                    // in seconds
  };
  Snapshot Read() const;

 private:
  const std::vector<double> bounds_;
  std::unique_ptr<std::atomic<uint64_t>[]> buckets_;  // per bucket, not cumulative; +1 for +Inf
  std::atomic<uint64_t> sum_ns_{0};
};

}  // namespace onset::common
