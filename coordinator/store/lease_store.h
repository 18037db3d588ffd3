// The store's claims and leases: a worker claims a cell, and every later call for that job names
// its lease and is fenced by the cell lifecycle (coordinator/cells/cell_lifecycle.h).
//
// Thread-safety: implementations are safe to call from any thread. Errors shared by all methods:
// Unavailable (may pass: busy, disk full) or Internal for database failures (the message names
// the file; db/sqlite.h maps SQLite's errors).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "coordinator/cells/cell_state.h"
#include "coordinator/cells/failure_policy.h"
#include "coordinator/store/worker_store.h"
#include "coordinator/study/grid.h"

namespace onset::coordinator {

// A checkpoint an attempt may resume from: one its cell's lineage recorded (the trainer reported
// its checkpoint/bytes point), named by the attempt that wrote it and its tokens.
struct ResumePoint {
  int attempt = 0;     // the attempt that wrote it
  int64_t tokens = 0;  // tokens trained when it was written
  // Whether that attempt wrote into a directory of its own (CELLDIR/attempt-N, every attempt
  // since schema version 10) rather than into the cell's directory (CELLDIR).
  bool own_dir = true;
  int64_t bytes = 0;  // its size, as the trainer reported it (DescribeCell only)
};

// At most this many ResumePoints go with a job, the newest first.
inline constexpr int kMaxResumePoints = 8;

// A cell handed to a worker under a lease.
struct ClaimedJob {
  std::string lease_id;
  std::string worker_id;
  std::string study;
  std::string cell_id;
  int attempt = 0;  // 1 for the first attempt
  std::string config_json;
  int64_t tokens_budget = 0;
  // Where it may resume, the newest first: the checkpoints its lineage recorded (at most
  // kMaxResumePoints). Empty: it starts from scratch (or, a branch, from its trunk's checkpoint).
  std::vector<ResumePoint> resume_from;
  bool fresh = false;                // it starts a new lineage (a `rerun --fresh`) from scratch
  std::vector<std::string> devices;  // the devices it runs on, one per data-parallel rank
  CellRole role = CellRole::kCell;
  std::string trunk_id;       // kBranch: the trunk whose checkpoint it starts from
  int64_t branch_tokens = 0;  // kBranch: that checkpoint's tokens
  // kBranch, ready: the trunk attempt that recorded that checkpoint (0: unknown), and whether it
  // wrote into a directory of its own.
  int trunk_attempt = 0;
  bool trunk_own_dir = true;
};

// CountWaitingCells counts no further.
inline constexpr int kMaxCountedWaitingCells = 1000;

struct MetricPoint {
  std::string name;
  int64_t tokens = 0;
  double value = 0;        // NaN is allowed (a diverged run) and reads back as NaN
  int64_t at_unix_ms = 0;  // when it was measured (ms since the Unix epoch); 0: not known
};

// The answer to a heartbeat.
struct LeaseStatus {
  // A cancel or rerun of the cell waits for this attempt: stop the trainer, report kCancelled.
  bool cancelled = false;
};

// Claims, and what the attempt under a lease reports.
class LeaseStore {
 public:
  virtual ~LeaseStore() = default;

  // Claims the cell the claim rule names (coordinator/cells/claim_rule.h, with
  // free_devices.size() devices free; a branch is ready once its trunk has reported the
  // "checkpoint/bytes" point at its branch_tokens) for `worker_id`: the lifecycle
  // (cell_lifecycle.h) opens its next attempt under a fresh random lease id, on the first
  // devices of `free_devices` it needs (recorded with the attempt and returned). The job names
  // the checkpoints its lineage recorded, newest first, and the cell's points past the newest
  // are discarded: the attempt continues from there. A cell needing more devices than are free
  // is passed over, not waited for. nullopt when no queued cell fits. FailedPrecondition for a
  // worker id that is not registered; InvalidArgument when `free_devices` is empty, repeats a
  // device, or names one the worker did not register (a worker that registered no devices may
  // name any).
  virtual absl::StatusOr<std::optional<ClaimedJob>> ClaimNextCell(
      const std::string& worker_id, const std::vector<std::string>& free_devices) = 0;
  // The queued cells, waiting out a backoff or not, that need at most as many devices as the
  // worker registered (its slots): the work it could run later when ClaimNextCell finds none it
  // can run now (a backoff not yet over, a WSD branch waiting for its trunk's checkpoint, a
  // cell needing more devices than are free). Counts at most kMaxCountedWaitingCells; 0 for an
  // unknown worker. Writes nothing.
  virtual absl::StatusOr<int> CountWaitingCells(const std::string& worker_id) = 0;

  // The following take the lease of an attempt and are fenced (cell_lifecycle.h): they write
  // nothing and fail with FailedPrecondition (whose message says to stop the job) when the
  // lease is unknown or its attempt is not its cell's current open one.
  //
  // Renews nothing (the lease manager keeps deadlines) but records progress: `tokens_done`
  // nullopt or past the attempt's bound keeps the cell's as it was. The answer says whether a
  // cancel or rerun waits for the attempt.
  virtual absl::StatusOr<LeaseStatus> RecordProgress(const std::string& lease_id,
                                                     std::optional<int64_t> tokens_done,
                                                     double tokens_per_second) = 0;
  // Upserts the points in one transaction: a point re-sent for the same (cell, name, tokens)
  // replaces the stored one. A point past the attempt's bound (its cell's budget plus one
  // step and one evaluation interval) is refused, alone. A train/resumed_at_tokens point at T
  // says where the trainer started: the cell's points past T that other attempts wrote go.
  // Returns the number of points written.
  virtual absl::StatusOr<int> AddMetrics(const std::string& lease_id,
                                         const std::vector<MetricPoint>& points) = 0;
  // Ends the attempt as its worker reports (a Report of cell_lifecycle.h: the failure policy,
  // the trunk rule, a pending cancel or rerun). A success of an attempt that ended lost is still
  // taken while the cell has not been claimed again; every other report of an ended attempt is
  // fenced. A trunk that ends for good (failed, diverged, cancelled; here, in ExpireAttempt or
  // in CancelCells) ends its queued or backoff branches still waiting for their checkpoint:
  // diverged when it diverged, failed otherwise, with the last error "trunk ID STATE: REASON".
  // RerunCells queues them again.
  virtual absl::Status FinishAttempt(const std::string& lease_id, const AttemptEnd& end) = 0;
  // The attempt's lease expired: it ends "lost" with `reason`, counted as a failure only when
  // its worker ever called for it, and its cell may not be claimed for `stop_margin_ms` (while
  // its worker may still be stopping the trainer). FailedPrecondition when it is not open.
  virtual absl::Status ExpireAttempt(const std::string& lease_id, const std::string& reason,
                                     int64_t stop_margin_ms) = 0;
  // The attempt is known to have stopped without a report (the embedded coordinator restarted
  // after its trainer was gone): it ends "handed_back", the cell is queued again at once, no
  // failure counted. FailedPrecondition when it is not open.
  virtual absl::Status HandBackAttempt(const std::string& lease_id, const std::string& reason) = 0;
  // The worker the lease was given to. FailedPrecondition for an unknown lease.
  virtual absl::StatusOr<std::string> LeaseHolder(const std::string& lease_id) = 0;

  // Attempts without an end, oldest first.
  virtual absl::StatusOr<std::vector<RunningAttempt>> RunningAttempts() = 0;
};

}  // namespace onset::coordinator
