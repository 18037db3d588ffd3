// Idle workers beside busy ones: a WSD study whose branches (about 100,000) wait for their
// trunks, one busy worker per trunk heartbeating and reporting, and hundreds of idle workers
// polling LeaseJob at the worker's own cadence and getting nothing. What it shows: whether the
// polls of workers with nothing to do slow the heartbeats that keep the busy workers' leases.
#pragma once

#include <string>

namespace onset::bench {

struct IdleOptions {
  int idle_workers = 500;
  int busy_workers = 64;   // one seed, so one trunk, each
  int branches = 100'000;  // branch cells in all, split evenly over the trunks
  int seconds = 60;        // how long the busy and idle workers run
  // A real worker polls every 2 s while nothing is queued (worker/worker.h).
  int poll_interval_ms = 2'000;
  // Each busy worker sends one metric batch and one heartbeat this often (a real one heartbeats
  // every 5 s; 1 s offers five times the load and gives more samples).
  int busy_interval_ms = 1'000;
  int points = 20;  // points per metric batch
  std::string dir;  // for the database; empty: a fresh temporary one, removed afterwards
};

// Prints one line per measurement; returns 0 when no call failed and no idle poll got a cell.
int RunIdleBench(const IdleOptions& options);

}  // namespace onset::bench
