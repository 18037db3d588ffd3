// The coordinator's durable state, as domain operations. No gRPC or SQLite here: SqliteStore
// implements it; tests may fake it.
//
// Thread-safety: implementations are safe to call from any thread.
// Errors shared by all methods: Unavailable (may pass: busy, disk full) or Internal for database
// failures (the message names the file; db/sqlite.h maps SQLite's errors).
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
#include "coordinator/cells/worker_slots.h"
#include "coordinator/study/grid.h"

namespace onset::coordinator {

inline constexpr size_t kMaxDeviceNameBytes = 64;
// A list of device names as the store keeps them: each non-empty and without commas, none
// repeated, at most kMaxWorkerDevices. InvalidArgument naming `field` and the bad name.
absl::Status CheckDeviceNames(const std::vector<std::string>& devices, const std::string& field);

struct StudyInfo {
  std::string name;
  std::string description;
  std::string source_name;
  std::string source_yaml;
  int64_t created_unix_ms = 0;
  // Grid points only: trunks (CellRole::kTrunk) are jobs and are not counted.
  int cells_total = 0;
  std::map<std::string, int> cells_by_state;  // CellStateName -> count; absent = 0
  // Set when the latest kRepeatedFailures failed attempts of the study failed alike (same
  // failure class and reason): "3 cells in a row failed: <reason>". Empty otherwise.
  std::string alert;
  // Set when queued cells of the study need more devices than any registered worker has:
  // "2 queued cells need 4 devices; the largest registered worker has 2". Empty otherwise (and
  // while no worker is registered).
  std::string waiting;
};

inline constexpr int kRepeatedFailures = 3;
// Log lines kept per attempt; older ones are dropped as new ones arrive.
inline constexpr int64_t kMaxLogLinesPerAttempt = 20000;

struct CellInfo {
  std::string id;  // content hash
  std::string study;
  std::map<std::string, std::string> axes;
  std::map<std::string, std::vector<std::string>> axis_aliases;  // CellSpec::axis_aliases
  CellState state = CellState::kQueued;
  int64_t tokens_done = 0;
  int64_t tokens_budget = 0;
  std::optional<double> latest_loss;  // the "train/loss" point with the most tokens
  int attempts = 0;                   // attempts started
  // Reason of the latest attempt if it did not succeed; for a branch that ended because its
  // trunk did, "trunk ID STATE: REASON".
  std::string last_error;
  double tokens_per_second = 0;
  int failures = 0;              // counted failures since it was last queued by hand
  int64_t retry_at_unix_ms = 0;  // state kBackoff: claimable from then on
  int devices = 1;               // devices one attempt needs
  // The model of its config (model_cost.h); 0 when the config cannot be read.
  int64_t non_embedding_params = 0;
  double train_flops_per_token = 0;
  CellRole role = CellRole::kCell;  // CellSpec::role
  std::string trunk_id;             // kBranch: its trunk's id
  int64_t branch_tokens = 0;        // kBranch: the trunk checkpoint it starts from, tokens
  // kBranch, queued or backing off: the trunk has not reported that checkpoint yet (no
  // "checkpoint/bytes" point at branch_tokens); the branch cannot be claimed until it does.
  bool waiting_for_trunk = false;
};

// A change of a cell's state, from the durable event log (one row per change, in order).
struct CellEvent {
  int64_t seq = 0;  // grows with every event of the coordinator; resume after the last seen
  std::string cell_id;
  std::map<std::string, std::string> axes;
  std::optional<CellState> from;  // nullopt: the cell was added to the study
  CellState to = CellState::kQueued;
  int64_t at_unix_ms = 0;
  int attempt = 0;        // the cell's latest attempt then (0: none yet)
  std::string worker_id;  // that attempt's worker
  std::string reason;     // that attempt's reason when it ended unsuccessfully
};

// One line a trainer wrote to stderr. `line` counts from 1 per attempt.
struct LogLine {
  int64_t line = 0;
  int64_t at_unix_ms = 0;
  std::string text;
};

// Which log `onset logs` reads: a cell (by id or a unique prefix of it, in `study` or, when
// empty, in any study), one attempt (0 = the latest), lines after `after_line`.
struct LogQuery {
  std::string study;
  std::string cell;
  int attempt = 0;
  int64_t after_line = 0;
  int limit = 1000;
};

struct LogChunk {
  std::string study;
  std::string cell_id;
  int attempt = 0;         // 0 when the cell has no attempt yet
  int latest_attempt = 0;  // the cell's newest attempt
  std::string worker_id;
  bool ended = false;  // the attempt has ended: no more lines will come
  CellState cell_state = CellState::kQueued;
  int64_t first_line = 0;  // the oldest line still kept (older ones were dropped), 0 if none
  // In order, after query.after_line, at most query.limit and about 1 MiB of text (at least
  // one line): fewer than the limit does not mean there are no more.
  std::vector<LogLine> lines;
};

struct NewStudy {
  std::string name;
  std::string description;
  std::string source_name;
  std::string source_yaml;
  std::vector<CellSpec> cells;
  int devices = 1;  // devices one attempt of each new cell needs (data-parallel ranks)
  // PlanInputDigest (trunk_plan.h) of the stored study its trunks were planned against: set,
  // AddStudy stores nothing and fails with Aborted when the study's stored plan differs now
  // (another submission of it was stored meanwhile), so that the caller plans again.
  std::optional<std::string> planned_against = std::nullopt;
};

struct AddStudyResult {
  StudyInfo study;
  int cells_added = 0;                    // cells that did not exist before
  std::vector<CellInfo> cells;            // every cell of the submission, in its order
  std::vector<std::string> new_cell_ids;  // those that did not exist before, in its order
};

// Which of a study's cells a read returns, in queue order: those after queue position `after`
// (0: from the first), at most `limit` of them (0: all).
struct CellPage {
  int64_t after = 0;
  int limit = 0;
};

// Which cells a watcher's progress check reads: the running ones and the named ones.
struct CellFilter {
  bool running = false;
  std::vector<std::string> ids;
};

struct StudyDetail {
  StudyInfo study;
  std::vector<CellInfo> cells;  // queue order
  int64_t next_after = 0;       // the `after` of the next page; 0 when this one is the last
};

// A study as of one instant, with the seq of the last event that instant includes.
struct StudySnapshot {
  StudyDetail detail;
  int64_t last_seq = 0;
};

// A checkpoint an attempt may resume from: one its cell's lineage recorded (the trainer reported
// its checkpoint/bytes point), named by the attempt that wrote it and its tokens.
struct ResumePoint {
  int attempt = 0;     // the attempt that wrote it
  int64_t tokens = 0;  // tokens trained when it was written
  // Whether that attempt wrote into a directory of its own (CELLDIR/attempt-N, every attempt
  // since schema version 10) rather than into the cell's directory (CELLDIR).
  bool own_dir = true;
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

// What trunk planning (trunk_plan.h) needs to know of a stored cell.
struct StoredPlanCell {
  std::string id;
  CellRole role = CellRole::kCell;
  std::string trunk_id;       // kBranch
  int64_t branch_tokens = 0;  // kBranch
  CellState state = CellState::kQueued;
  int64_t tokens_done = 0;
  int64_t tokens_budget = 0;
  std::string config_json;  // kTrunk only: its trunk spec
};

// A registered worker: its id, public (listings, logs and watch streams show it), and the secret
// only it knows, which every later call for it must carry (Store::AuthenticateWorker).
struct RegisteredWorker {
  std::string id;
  std::string secret;
};

struct WorkerRegistration {
  std::string host;
  int slots = 1;  // jobs at once; devices.size() when devices are given
  std::string version;
  std::vector<std::string> devices = {};  // "cuda:0", "cpu:1", ...; empty: it names none
  std::string slurm_job = {};  // the Slurm job it runs in ("1234", "1234_5"); empty: none
};

// The Slurm job id a worker may report: at most this long, printable ASCII without spaces.
inline constexpr size_t kMaxSlurmJobBytes = 64;
// InvalidArgument naming `field` when `slurm_job` is not empty and not such an id.
absl::Status CheckSlurmJob(const std::string& slurm_job, const std::string& field);

// CountWaitingCells counts no further.
inline constexpr int kMaxCountedWaitingCells = 1000;

struct MetricPoint {
  std::string name;
  int64_t tokens = 0;
  double value = 0;  // NaN is allowed (a diverged run) and reads back as NaN
};

// An attempt without an end, as found in the database (e.g. after a restart).
struct RunningAttempt {
  std::string lease_id;
  std::string worker_id;
  std::string study;
  std::string cell_id;
  int attempt = 0;
  std::vector<std::string> devices;  // the devices it was given
};

// The answer to a heartbeat.
struct LeaseStatus {
  // A cancel or rerun of the cell waits for this attempt: stop the trainer, report kCancelled.
  bool cancelled = false;
};

// Which cells `onset rerun` queues again.
struct RerunRequest {
  std::string study;
  // Cells in one of these states (a running cell whose cancel is pending counts as cancelled);
  // none named: every cell that ended or waits out a backoff.
  std::vector<CellState> states;
  std::map<std::string, std::string> where;  // and whose display axes have these values
  std::vector<std::string> cell_ids;         // and, when given, only these cells
  bool fresh = false;  // a new lineage: discard points and checkpoints, start from scratch
};

// A registered worker and the attempts it is running.
struct WorkerInfo {
  std::string id;
  std::string host;
  int slots = 1;
  std::string version;
  std::vector<std::string> devices;  // as registered
  std::string slurm_job;             // as registered; empty: none
  int64_t registered_unix_ms = 0;
  int64_t last_seen_unix_ms = 0;  // its latest lease request or heartbeat
  int64_t exited_unix_ms = 0;     // when it said it exits (DeregisterWorker); 0: it has not
  std::vector<RunningAttempt> running;
};

// A worker listing returns at most this many workers.
inline constexpr int kMaxWorkersPerPage = 1000;

// Which registered workers a listing returns: the most recently seen first, a page at a time.
struct WorkerQuery {
  // > 0: only live workers, those that have not exited and were seen at or after this time.
  int64_t live_since_unix_ms = 0;
  int limit = 200;  // workers at most (a worker may name up to kMaxWorkerDevices devices)
  // The page after this worker: its last_seen_unix_ms and id (a page's `next`); none: from the
  // most recently seen.
  std::optional<std::pair<int64_t, std::string>> after;
};

struct WorkerPage {
  std::vector<WorkerInfo> workers;  // each with its running attempts
  int64_t matching = 0;             // workers the query selects from its cursor on (this
                                    // page's and later ones)
  int64_t not_live = 0;             // with live_since: the registered workers left out
  std::optional<std::pair<int64_t, std::string>> next;  // the next page's `after`; none: last
};

struct CellResult {
  CellInfo cell;
  std::map<std::string, double> final_metrics;  // name -> value at its largest tokens count
};

// A page of results; next_after as in StudyDetail.
struct ResultPage {
  std::vector<CellResult> results;  // queue order
  int64_t next_after = 0;
};

class Store {
 public:
  virtual ~Store() = default;

  // Inserts the study (or finds it by name) and the cells it does not have yet. Every check
  // runs before anything is written; the rows are then written in bounded transactions (so that
  // no other write waits long behind a large submission): a write that fails midway leaves the
  // cells written so far, and its error says how many (submitting the file again adds the rest).
  // A new branch is never claimable before it is linked to its trunk. The same file twice adds
  // nothing; a changed file under the same name adds only its new
  // cells (existing cells, also those no longer in the file, stay), records the latest source
  // and shows the existing cells it names with its display axes. Studies are append-only
  // (append_only.h): FailedPrecondition, and nothing written, when a new cell would redefine
  // the grid point of a stored one (trunks are not grid points and are not compared).
  // Cells of role kTrunk whose id is stored already are trunks being extended: when the new
  // spec's tokens_budget is larger, the stored config_json and tokens_budget are replaced and a
  // succeeded trunk is queued again (it resumes from its last checkpoint); otherwise the stored
  // trunk stays as it is. A stored cell keeps its role. A new branch's trunk_id must name a
  // trunk of the study, stored before or in this submission: InvalidArgument, and nothing
  // written, otherwise.
  virtual absl::StatusOr<AddStudyResult> AddStudy(const NewStudy& study) = 0;
  // What AddStudy would return, errors included, without writing anything; it reads only (on a
  // reader: it never holds up a write). Cells not stored yet appear queued.
  virtual absl::StatusOr<AddStudyResult> PreviewStudy(const NewStudy& study) = 0;
  // Every stored cell of the study with its role, trunks included; empty for an unknown study.
  virtual absl::StatusOr<std::vector<StoredPlanCell>> PlanCells(const std::string& study) = 0;
  // Oldest first.
  virtual absl::StatusOr<std::vector<StudyInfo>> ListStudies() = 0;
  // The study and the cells of `page`. NotFound for an unknown name.
  virtual absl::StatusOr<StudyDetail> GetStudy(const std::string& name, const CellPage& page) = 0;
  absl::StatusOr<StudyDetail> GetStudy(const std::string& name) { return GetStudy(name, {}); }
  // The study's cells that `filter` selects (queue order), without the study. NotFound for an
  // unknown study.
  virtual absl::StatusOr<std::vector<CellInfo>> FindCells(const std::string& study,
                                                          const CellFilter& filter) = 0;
  // `ids` with each one shorter than a full id (base::kCellIdHexChars) replaced by the id of the
  // one cell of `study` it begins; full ids are kept as they are. NotFound for an unknown study or
  // a prefix no cell begins; InvalidArgument for a prefix of fewer than 4 lowercase hex digits, or
  // one that several cells begin (the message lists some of them).
  virtual absl::StatusOr<std::vector<std::string>> ResolveCellIds(
      const std::string& study, const std::vector<std::string>& ids) = 0;

  // Registers a worker: its new id and secret (only a hash of the secret is kept).
  // InvalidArgument for bad device names (CheckDeviceNames) or a bad Slurm job id
  // (CheckSlurmJob).
  virtual absl::StatusOr<RegisteredWorker> RegisterWorker(const WorkerRegistration& worker) = 0;
  // OK when `secret` is the one `worker_id` was given at registration and it has not
  // deregistered; every call a worker makes for itself is checked so (worker ids are public).
  // FailedPrecondition, saying to register again, for an unknown worker, one that deregistered
  // or one registered before workers had secrets; PermissionDenied for a wrong secret. Reads
  // only.
  virtual absl::Status AuthenticateWorker(const std::string& worker_id,
                                          const std::string& secret) = 0;
  // The registered workers `query` selects, the most recently seen first, with their running
  // attempts: one page, read by index, whatever the number of workers.
  virtual absl::StatusOr<WorkerPage> ListWorkers(const WorkerQuery& query) = 0;
  // Every registered worker (in pages of `query.limit`), for tests and small tools.
  absl::StatusOr<std::vector<WorkerInfo>> ListWorkers() {
    std::vector<WorkerInfo> all;
    WorkerQuery query;
    while (true) {
      absl::StatusOr<WorkerPage> page = ListWorkers(query);
      if (!page.ok()) return page.status();
      for (WorkerInfo& w : page->workers) all.push_back(std::move(w));
      if (!page->next) return all;
      query.after = page->next;
    }
  }
  // The worker exits cleanly: records the time (WorkerInfo::exited_unix_ms), once, and hands
  // back any attempt of it still open (its trainers have stopped: the cells are queued again,
  // no failure counted). NotFound for an unknown worker.
  virtual absl::Status DeregisterWorker(const std::string& worker_id) = 0;

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

  // Cancels the given cells of `study` (all of them when `cell_ids` is empty) that have not
  // ended: queued and backoff cells at once; a running one stays running until its attempt has
  // ended (its worker hears of the cancel at its next call). Returns the number of cells
  // cancelled. NotFound for an unknown study or cell.
  virtual absl::StatusOr<int> CancelCells(const std::string& study,
                                          const std::vector<std::string>& cell_ids) = 0;
  // Queues again the cells the request selects (a running cell whose cancel is pending counts
  // as cancelled) and resets their failure count; a running one is queued once its attempt has
  // ended. Named cells cost a lookup each, a filter a pass over the study. Returns their number.
  // NotFound for an unknown study or cell.
  virtual absl::StatusOr<int> RerunCells(const RerunRequest& request) = 0;

  // Attempts without an end, oldest first.
  virtual absl::StatusOr<std::vector<RunningAttempt>> RunningAttempts() = 0;

  // The cells of `page` with their final metrics, trunks left out (they are not grid points).
  // NotFound for an unknown study.
  virtual absl::StatusOr<ResultPage> Results(const std::string& study, const CellPage& page) = 0;
  // Every cell of the study with its final metrics.
  absl::StatusOr<std::vector<CellResult>> Results(const std::string& study) {
    absl::StatusOr<ResultPage> all = Results(study, {});
    if (!all.ok()) return all.status();
    return std::move(all->results);
  }

  // The study and the seq of the newest event it reflects, read in one snapshot, so that the
  // events after last_seq are exactly the changes since. NotFound for an unknown study.
  virtual absl::StatusOr<StudySnapshot> SnapshotStudy(const std::string& name) = 0;
  // The study's events with seq > after_seq, oldest first, at most `limit`. NotFound for an
  // unknown study.
  virtual absl::StatusOr<std::vector<CellEvent>> StudyEvents(const std::string& study,
                                                             int64_t after_seq, int limit) = 0;
  // A counter that grows whenever something is written. WaitForChange blocks until it exceeds
  // `seen` or `timeout_ms` passed, and returns it; a watcher polls with it instead of a timer.
  virtual int64_t ChangeVersion() = 0;
  virtual int64_t WaitForChange(int64_t seen, int64_t timeout_ms) = 0;

  // Stores log lines of the attempt under the lease (a line re-sent under its number replaces
  // itself) and drops the attempt's oldest lines beyond kMaxLogLinesPerAttempt. Returns the
  // number written. FailedPrecondition like the other lease calls.
  virtual absl::StatusOr<int> AppendLogs(const std::string& lease_id,
                                         const std::vector<LogLine>& lines) = 0;
  // NotFound for an unknown study, cell or attempt; InvalidArgument when a cell prefix matches
  // several cells (the message lists them).
  virtual absl::StatusOr<LogChunk> ReadLogs(const LogQuery& query) = 0;

  // The names of the metrics the study's cells reported (trunks left out), each with how many
  // cells reported it, by name; one aggregate read, whatever the number of points. NotFound for
  // an unknown study.
  virtual absl::StatusOr<std::vector<std::pair<std::string, int>>> MetricNames(
      const std::string& study) = 0;

  // Calls `point` for every stored point of `metrics` (all when empty) of the study's cells
  // (`cell_ids`, or all when empty; never a trunk's: its stable phase is in its branches'
  // curves), ordered by cell (queue order), name and tokens; stops early when `point` returns
  // false. `point` is never called while a database reader is held: the points are read in
  // pages, each its own snapshot, so a point added meanwhile may or may not be seen, and none
  // twice. NotFound for an unknown study or cell. NaN values come as NaN.
  virtual absl::Status ForEachMetricPoint(
      const std::string& study, const std::vector<std::string>& metrics,
      const std::vector<std::string>& cell_ids,
      const std::function<bool(const std::string& cell_id, const std::string& metric,
                               int64_t tokens, double value)>& point) = 0;
};

}  // namespace onset::coordinator
