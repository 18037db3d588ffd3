// What single calls cost a real onsetd (a child process, so that its own memory is measured) at
// the limits, while four workers heartbeat a running cell every 100 ms: a 100,000-cell submission,
// six dry runs of one at once, `onset logs CELL` by a prefix in any study, a rerun of one named
// cell, and listings of 3,000 workers that name 1,024 devices each. For each: its time, the
// slowest heartbeat meanwhile, and onsetd's resident memory (now and peak).
#pragma once

#include <string>

namespace onset::bench {

struct CostsOptions {
  int cells = 100'000;
  int dry_runs = 6;
  int big_workers = 3'000;
  std::string bin_dir;  // where onsetd is
  std::string dir;      // for the database; empty: a fresh temporary one, removed afterwards
};

// Prints one line per measurement; returns 0 when no call failed.
int RunCostsBench(const CostsOptions& options);

}  // namespace onset::bench
