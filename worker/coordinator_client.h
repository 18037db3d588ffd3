// The worker's view of the coordinator's WorkerService, as an interface so that the job runner
// and the worker loop are tested against a fake. Types here are the worker's domain types; only
// GrpcCoordinatorClient knows the proto.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/client_security.h"
#include "worker/metrics_parser.h"

namespace onset::worker {

struct Registration {
  std::string worker_id;
  // What proves the worker is worker_id; the client keeps it and sends it with every later call
  // for that worker.
  std::string secret;
  std::chrono::milliseconds lease_ttl{30'000};
  std::chrono::milliseconds heartbeat_interval{5'000};
};

// A checkpoint the attempt may resume from (the coordinator names them, the newest first).
struct ResumeFrom {
  int attempt = 0;      // the attempt of the cell that wrote it
  int64_t tokens = 0;   // tokens trained when it was written
  std::string path;     // its file when the coordinator has a shared root; empty: the work dir's
  bool own_dir = true;  // written into that attempt's own directory (else the cell's)
};

// One leased attempt at one cell.
struct JobSpec {
  std::string lease_id;  // names this attempt in every later call
  std::string study;
  std::string cell_id;
  int attempt = 1;          // 1 for the first attempt of the cell
  std::string config_json;  // handed to the trainer verbatim
  int64_t tokens_budget = 0;
  // The attempt starts a new lineage (a `rerun --fresh`): resume_from is empty.
  bool fresh = false;
  // Where this attempt writes its checkpoints, a directory of its own under the coordinator's
  // shared root; empty = under the work directory (attempt_dir.h).
  std::string checkpoint_dir;
  // What it may resume, the newest first; empty: from scratch (a branch: from its trunk's file).
  std::vector<ResumeFrom> resume_from;
  // The worker's devices this attempt runs on, one per data-parallel rank (devices.h); empty =
  // unspecified: the trainer picks its device itself.
  std::vector<std::string> devices;
  // A WSD branch's trunk checkpoint file, started from when the cell has no checkpoint of its own
  // (onset-train --branch-from); empty for other cells.
  std::string trunk_checkpoint;
  // When the worker asked for the lease (its monotonic clock): the coordinator's deadline runs
  // from the claim, which came after, so the worker's view of the lease starts here.
  std::chrono::steady_clock::time_point asked_at{};
};

// The coordinator's answer to a lease request.
struct LeaseReply {
  std::optional<JobSpec> job;  // nullopt when no queued cell fits the free devices now
  // Without a job: the queued cells (at most 1,000 counted) that fit this worker's devices but
  // cannot be leased now: waiting out a retry backoff, a WSD branch waiting for its trunk's
  // checkpoint, a cell needing more devices than are free. 0: no work for this worker.
  int queued_waiting = 0;
};

// What the worker reports of an attempt; the coordinator applies its failure policy to kFailed.
enum class JobOutcome {
  kSucceeded,   // the trainer exited 0
  kFailed,      // it exited non-zero (not diverged or stopped), was killed, or could not start
  kDiverged,    // it stopped on a non-finite loss (exit code 3): a result
  kHandedBack,  // the worker was asked to stop, or a signal made the trainer checkpoint and exit
  kCancelled,   // the coordinator said the cell was cancelled; the trainer was stopped
};

// The coordinator's answer to a heartbeat.
struct HeartbeatReply {
  bool cancel = false;  // the cell was cancelled: stop the trainer, report kCancelled
};

struct Progress {
  int64_t tokens_done = 0;
  double tokens_per_second = 0;
};

// One line of the trainer's stderr, numbered from 1 per attempt.
struct LogLine {
  int64_t line = 0;
  int64_t at_unix_ms = 0;
  std::string text;
};

struct JobResult {
  JobOutcome outcome = JobOutcome::kFailed;
  bool succeeded() const { return outcome == JobOutcome::kSucceeded; }
  int exit_code = 0;        // the trainer's exit status when it exited
  int signal = 0;           // the signal that killed it, 0 if none
  std::string reason;       // one line, empty on success
  std::string stderr_tail;  // the trainer's last stderr lines
};

// Thread-safe: job runners call it concurrently. Once Register() returned, every call for that
// worker id carries the secret the coordinator gave it.
// Errors: FailedPrecondition means the lease (or the worker id) is unknown or expired, or its
// attempt is no longer its cell's current one - the job must stop; Unavailable /
// DeadlineExceeded mean the coordinator could not be reached and the call may be retried;
// Unauthenticated means the coordinator refuses the token, PermissionDenied the worker's secret.
// Messages name the RPC and the coordinator's address.
class CoordinatorClient {
 public:
  virtual ~CoordinatorClient() = default;

  // `devices`: what the worker offers (devices.h); it runs as many jobs at once as it has.
  // `slurm_job`: the Slurm job it runs in (slurm_job.h), "" when none.
  virtual absl::StatusOr<Registration> Register(const std::string& host,
                                                const std::vector<std::string>& devices,
                                                const std::string& version,
                                                const std::string& slurm_job) = 0;
  // A job that fits in `free_devices` (the worker's devices no job of its own uses) and runs on
  // the first ones it needs; without one, how many queued cells wait for this worker. `timeout`
  // (> 0) bounds the call below the client's own deadline: a reply later than the lease lasts
  // is of no use.
  virtual absl::StatusOr<LeaseReply> Lease(
      const std::string& worker_id, const std::vector<std::string>& free_devices,
      std::chrono::milliseconds timeout = std::chrono::milliseconds(0)) = 0;
  // For the calls of a lease, `timeout` (> 0) bounds the call below the client's own deadline:
  // a call made when little of the lease is left must not outlast it (a partition that drops
  // packets would otherwise hold the job's thread, and so its trainer, for the whole deadline).
  virtual absl::StatusOr<HeartbeatReply> Heartbeat(
      const std::string& worker_id, const std::string& lease_id, const Progress& progress,
      std::chrono::milliseconds timeout = std::chrono::milliseconds(0)) = 0;
  // Idempotent per (cell, metric, tokens) on the coordinator's side, so a batch may be re-sent.
  virtual absl::Status ReportMetrics(
      const std::string& worker_id, const std::string& lease_id,
      const std::vector<MetricPoint>& points,
      std::chrono::milliseconds timeout = std::chrono::milliseconds(0)) = 0;
  virtual absl::Status Finish(const std::string& worker_id, const std::string& lease_id,
                              const JobResult& result) = 0;
  // Idempotent per line number, so a batch may be re-sent.
  virtual absl::Status AppendLogs(
      const std::string& worker_id, const std::string& lease_id, const std::vector<LogLine>& lines,
      std::chrono::milliseconds timeout = std::chrono::milliseconds(0)) = 0;
  // The worker exits cleanly: it leaves the coordinator's list of live workers.
  virtual absl::Status Deregister(
      const std::string& worker_id,
      std::chrono::milliseconds timeout = std::chrono::milliseconds(0)) = 0;
};

// Creates a client of the coordinator at `address` ("host:port"): every call carries the token
// of `security` and the deadline `rpc_timeout`, over TLS when `security` has certificates.
std::unique_ptr<CoordinatorClient> NewGrpcCoordinatorClient(
    const std::string& address, const common::ClientSecurity& security,
    std::chrono::milliseconds rpc_timeout = std::chrono::seconds(10));

}  // namespace onset::worker
