// The coordinator at its documented limits: a 100,000-cell study submitted, then read the way
// `onset status`, `onset watch`, `onset results` and `onset compare` read it (page by page), and
// 1,000 simulated workers leasing and reporting at once. Every call is timed one by one.
#pragma once

#include <string>

namespace onset::bench {

struct ScaleOptions {
  int cells = 100'000;
  int workers = 1'000;
  int rounds = 2;   // cells each worker runs
  int batches = 5;  // metric batches (each followed by a heartbeat) per cell
  int points = 20;  // points per batch
  // Each worker makes one call (lease, report, heartbeat or finish) every interval_ms, the
  // workers' calls spread over the interval: 1,000 workers at 1,000 ms offer 1,000 calls/s.
  // 0: back to back, which measures saturation rather than latency.
  int interval_ms = 1000;
  std::string dir;  // for the database; empty: a fresh temporary one, removed afterwards
};

// Prints one line per measurement; returns 0 when no call failed.
int RunScaleBench(const ScaleOptions& options);

}  // namespace onset::bench
