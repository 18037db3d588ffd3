// What the lifecycle simulator holds the system to once its faults have stopped and every cell
// has had its time to end, read from the trainers' journal (journal.h) and the coordinator's
// database:
//
//   1. never two trainers of one cell at once (the trainers' cell locks, VIOLATION lines);
//   2. every checkpoint an attempt was told to resume was there and whole (VIOLATION lines);
//   3. every stored point of a cell comes from one run (one lineage of attempts): one value of
//      sim/run, and after a fresh rerun a run that started after it was asked for. A WSD branch
//      (docs/wsd-trunks.md) stores its trunk's points up to its branch point as its own, as
//      onset-train replays the trunk's train events: there its points come from one trunk run,
//      past it from one run of its own that started from that trunk run's checkpoint (NEWRUN
//      with trunk_run), and no trainer of a branch ever starts from scratch;
//   4. a succeeded cell has its whole curve, a point at every step, and none past its budget (a
//      branch from its first step, a trunk up to its end: its tokens_budget);
//   5. failures are counted only for real ones: a counted crash is one the trainer made, a
//      counted loss is of an attempt whose trainer ran;
//   6. every cell ended (succeeded, failed, diverged or cancelled) in the time it was given, and
//      every cell that is still to exist (those the study files made, less what a restore lost)
//      is in the database: nothing recorded was lost;
//   7. every trunk checkpoint a branch starts from (a trunk's recorded checkpoint/bytes point at
//      one of its branches' branch points) is still on disk: a rerun of the branch starts from
//      it, and trunks keep them (docs/wsd-trunks.md).
//
// The scripted trainer evaluates nothing, so a branch's eval points are not checked. What the
// simulator checks while it runs (each backup, each backup aimed at the served database, the
// served file, each stalled reader) is in simulation.h.
//
// After a restore (docs/operating-onsetd.md) one promise is weaker, as stated there: a trainer of
// the lost timeline may have pruned a checkpoint the restored copy names, so a named checkpoint
// found missing by a trainer that started after a restore is no violation (the trainer goes on
// from an earlier one, or from scratch).
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace onset::sim {

struct CheckInput {
  std::string db;           // the coordinator's database, no longer served
  std::string journal_dir;  // the trainers' journal
  int64_t step_tokens = 0;  // tokens per step of every cell
  // Cell id -> when the latest `rerun --fresh` of it that the coordinator accepted was sent
  // (unix ms).
  std::map<std::string, int64_t> fresh_reruns;
  // Cell ids that must be in the database (empty: not checked).
  std::vector<std::string> expected_cells;
  // When restores happened (unix ms), in order.
  std::vector<int64_t> restores_unix_ms;
  // onsetd's --checkpoint-root, where trunks' checkpoints are looked for ("" = not checked).
  std::string checkpoint_root;
  // Studies whose cells are checked but not counted (one only there to be read, cancelled).
  std::set<std::string> uncounted_studies;
};

// What the cells came to, for the report.
struct CellCounts {
  int succeeded = 0;
  int failed = 0;
  int cancelled = 0;
  int diverged = 0;
  int unfinished = 0;
  int attempts = 0;
  int trainers = 0;               // START lines
  int missing_after_restore = 0;  // named checkpoints a restore's lost timeline had pruned
};

// Every broken promise, one line each; empty when all hold. `counts` is filled in.
std::vector<std::string> CheckInvariants(const CheckInput& input, CellCounts* counts);

}  // namespace onset::sim
