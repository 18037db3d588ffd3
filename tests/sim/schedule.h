// What the lifecycle simulator does, and when: a schedule drawn from a seed, so that a failing
// seed replays the same actions (the times are offsets from the start of the faults; what the
// processes do in between is not deterministic, but the faults are).
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace onset::sim {

enum class ActionKind {
  kCancel,           // onset cancel CELL
  kRerun,            // onset rerun CELL [--fresh] (failed, cancelled or succeeded)
  kCancelThenRerun,  // onset cancel CELL, then at once onset rerun CELL [--fresh]
  kRerunRunning,     // onset rerun --state running CELL [--fresh]
  kSignalWorker,     // a signal to a worker (SIGKILL, SIGTERM, SIGHUP), started again later
  kSignalDaemon,     // a signal to onsetd (SIGKILL, SIGTERM), started again later
  kPartition,        // the network between a worker and onsetd is cut for a while
  kSlowReplies,      // onsetd's replies to a worker arrive late for a while
  kDiskFull,         // onsetd's disk is full for a while
  kSubmit,           // a second study is submitted
  // What operators do (docs/operating-onsetd.md, "Backup and restore"):
  kBackup,            // onset backup --out DIR/backups/b-N.db, checked against the live database
  kBackupOverServed,  // onset backup --out naming the served database, its -wal or a hard link
                      // to it (`variant` 0, 1, 2): refused, nothing changed
  kRestore,           // the documented restore of an earlier backup (`choice`) while workers run
  kServeRotated,      // onsetd restarted on its newest rotating backup, where it lies
  kCancelStudy,       // onset cancel STUDY (`choice`: which study)
  kRerunStudy,        // onset rerun STUDY --state <every ended or running state> [--fresh]
  // Clients that stop reading for a while, then read (onsetd --stalled-reader-limit-ms):
  kStallBackup,  // a Backup stream
  kStallWatch,   // a WatchStudy stream of a study of a thousand cells
  kStallDryRun,  // a SubmitStudy dry run of a study of a few thousand cells
};

inline constexpr int kActionKinds = static_cast<int>(ActionKind::kStallDryRun) + 1;

// "cancel", "backup", "stall-watch", ...: one word per kind, for reports.
const char* KindName(ActionKind kind);

struct Action {
  int64_t at_ms = 0;  // from the start of the faults
  ActionKind kind = ActionKind::kCancel;
  int cell = 0;    // index into the study's cells
  int worker = 0;  // index of the worker
  int signal = 0;
  bool fresh = false;
  int64_t duration_ms =
      0;             // how long a partition, slow replies, a full disk or a down process lasts
  int delay_ms = 0;  // kSlowReplies: by how much
  int variant = 0;   // kBackupOverServed: 0 the database, 1 its -wal, 2 a hard link to it
  int choice = 0;    // kRestore: which backup taken so far; kCancelStudy, kRerunStudy: which study

  // One line, e.g. "+3.20s SIGKILL worker 1 (back after 1.5 s)".
  std::string Describe() const;
};

struct ScheduleOptions {
  int64_t faults_ms = 20'000;  // actions are drawn within this long
  int cells = 6;
  int workers = 3;
  bool full_disk = true;
};

// The seed's schedule: an action every 0.3 to 1.5 s, drawn among the kinds above. A restore
// comes only after a backup, and restores and restarts on a backup are at most two per seed
// (each costs the cells a lease TTL without claims); others become backups.
std::vector<Action> DrawSchedule(uint32_t seed, const ScheduleOptions& options);

// How many actions of each kind a schedule holds: "backup x3, restore x1, ..." (kinds in order).
std::string KindsOf(const std::vector<Action>& schedule);

}  // namespace onset::sim
