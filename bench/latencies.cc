#include "bench/latencies.h"

#include <algorithm>
#include <cstdio>

namespace onset::bench {

void Latencies::Add(double ms_value) {
  std::lock_guard<std::mutex> lock(mu_);
  ms_.push_back(ms_value);
}

std::string Latencies::Summary() {
  std::lock_guard<std::mutex> lock(mu_);
  if (ms_.empty()) return "-";
  std::sort(ms_.begin(), ms_.end());
  auto at = [&](double q) {
    return ms_[std::min(ms_.size() - 1, static_cast<size_t>(q * ms_.size()))];
  };
  char buf[160];
  std::snprintf(buf, sizeof buf, "n=%zu p50=%.2f ms p99=%.2f ms max=%.2f ms", ms_.size(), at(0.5),
                at(0.99), ms_.back());
  return buf;
}

}  // namespace onset::bench
