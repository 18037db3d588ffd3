// The lifecycle simulator: the real onsetd and onset-workers (with a scripted trainer, not
// onset-train) on loopback, a study of small cells and a WSD study whose budgets share a trunk,
// and a seeded random schedule of what users, machines and operators do to them (schedule.h):
// cancel, rerun, rerun --fresh, cancel then rerun of running cells and of whole studies, SIGKILL,
// SIGTERM and SIGHUP of workers and of onsetd (started again), partitions and slow replies
// through proxies, a full disk; backups while cells run, each checked against the live database,
// backups aimed at the served database (refused), restores of earlier backups while workers run,
// restarts on the newest rotating backup where it lies, and clients that stop reading a backup,
// a watch or a dry run's answer. Once the faults stop, every cell is given a bounded time to
// end, everything is stopped, and the invariants of checks.h are checked on the trainers'
// journal and the database, beside what was checked as it ran (each backup, each refusal, the
// served file, each stalled reader). A failing seed prints its schedule, to be replayed with the
// same seed.
//
// tests/sim/simulation_test.cc runs a few seeds in CI; bench/lifecycle_sim.cc runs as many as
// asked (docs/operating-onsetd.md gives how many ran clean).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "tests/sim/checks.h"
#include "tests/sim/schedule.h"

namespace onset::sim {

struct SimOptions {
  uint32_t seed = 1;
  std::string bin_dir;  // onsetd, onset-worker, onset-sim-trainer, libonset-sim-full-disk.so
  std::string dir;      // scratch; removed afterwards unless keep_dir (or a failure)
  bool keep_dir = false;
  // A cell takes some 5 s to train, and the study about as long as the faults go on (with three
  // workers), so that the faults strike cells at every stage.
  int workers = 3;
  int cells = 8;
  int steps = 50;  // per cell
  int step_ms = 100;
  int crash_permille = 2;  // chance per step that a trainer fails on purpose
  std::chrono::milliseconds faults{20'000};
  std::chrono::milliseconds settle{120'000};  // the time every cell then has to end
  bool full_disk = true;
  // A WSD study (three budgets: a trunk and three branches) beside the plain one.
  bool wsd = true;
  // onsetd's rotating backups (--backup-every 1s --backup-keep 2), which restarts on a backup
  // where it lies need.
  bool rotation = true;
  // onsetd's --stalled-reader-limit-ms; 0 leaves the flag out (a binary that lacks it) and the
  // stalled readers are skipped, since there is no limit to hold onsetd to.
  int64_t stalled_reader_limit_ms = 2000;
};

struct SimReport {
  uint32_t seed = 0;
  std::string kinds;                    // the kinds of action the schedule holds (KindsOf)
  std::vector<std::string> schedule;    // what was done, with what it answered
  std::vector<std::string> violations;  // broken promises (checks.h)
  CellCounts counts;
  double seconds = 0;
  std::string dir;  // kept when something failed

  bool ok() const { return violations.empty(); }
  // The seed, the counts, the kinds of action, and on failure (or with `schedule_too`) the
  // schedule, then every violation.
  std::string Describe(bool schedule_too = false) const;
};

SimReport RunSimulation(const SimOptions& options);

// The schedule options a simulation with `options` draws its schedule with.
ScheduleOptions ScheduleFor(const SimOptions& options);

// The seeds CI runs (simulation_test.cc), chosen so that between them every kind of action
// occurs (schedule_test.cc checks that they do): 1-4, then seeds with a restore, a restart on a
// rotating backup, the three stalled readers, whole-study reruns and every backup trap.
inline constexpr uint32_t kCiSeeds[] = {1, 2, 3, 4, 14, 22, 27, 28, 32, 38};

}  // namespace onset::sim
