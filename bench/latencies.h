// Call latencies of a benchmark, summarised as n, p50, p99 and max. Thread-safe.
#pragma once

#include <chrono>
#include <mutex>
#include <string>
#include <vector>

namespace onset::bench {

class Latencies {
 public:
  void Add(double ms);
  void Add(std::chrono::steady_clock::duration d) {
    Add(std::chrono::duration<double, std::milli>(d).count());
  }
  // "n=2000 p50=0.55 ms p99=4.91 ms max=7.10 ms", or "-" when nothing was added.
  std::string Summary();

 private:
  std::mutex mu_;
  std::vector<double> ms_;
};

}  // namespace onset::bench
