// The worker loop: registers its devices with the coordinator, then leases a job whenever one of
// them is free, runs it on the devices the coordinator gives it (one or more) and frees them when
// the job ends.
#pragma once

#include <chrono>
#include <condition_variable>
#include <list>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "common/clock.h"
#include "common/mutex.h"
#include "worker/coordinator_client.h"
#include "worker/idle_timer.h"
#include "worker/job_runner.h"
#include "worker/process_launcher.h"

namespace onset::worker {

struct WorkerConfig {
  std::string coordinator = "127.0.0.1:7070";  // host:port of the coordinator (for logs)
  std::string trainer_path;                    // the onset-train executable; required
  std::string work_dir = "onset-work";         // attempts run under it
  // The coordinator's --checkpoint-root as this machine sees it: a job's checkpoints may be
  // written (and, for a fresh start, deleted) only under work_dir or this (attempt_dir.h).
  std::string checkpoint_root;
  // What it offers (devices.h): GPUs "cuda:N" or CPU slots "cpu:N". A job takes as many as its
  // cell needs, so at most this many jobs run at once.
  std::vector<std::string> devices = {"cpu:0"};
  int threads_per_job = 1;                             // CPU threads given to each trainer
  std::chrono::milliseconds poll_interval{2'000};      // LeaseJob cadence while nothing is queued
  std::chrono::milliseconds max_backoff{15'000};       // cap of the retry delay when unreachable
  std::chrono::milliseconds terminate_grace{10'000};   // SIGTERM -> SIGKILL for trainers
  std::chrono::milliseconds flush_interval{1'000};     // metric batching, see JobRunnerConfig
  std::chrono::milliseconds stall_timeout{3'600'000};  // JobRunnerConfig::stall_timeout
  std::string host;                                    // reported at registration; empty = hostname
  std::string slurm_job;       // the Slurm job it runs in (slurm_job.h), reported at registration
  bool report_stopped = true;  // Stop() hands running jobs back, see JobRunnerConfig
  // Set: Run() returns by itself once the worker has had nothing to do for this long
  // (idle_timer.h) while no job ran here: OK when every lease answer said "no job, no queued cell
  // waits for you"; Unavailable when the coordinator could not be reached (or this worker never
  // registered) for the last of that time. At most kMaxExitWhenIdle.
  std::optional<std::chrono::milliseconds> exit_when_idle;

  // Names the first bad field, e.g. "devices: none given".
  absl::Status Validate() const;
};

// Run() is called once, on the thread that owns the worker; Stop() from any thread (e.g. a signal
// watcher). `client` and `launcher` are not owned, must be thread-safe and outlive the worker.
class Worker {
 public:
  Worker(WorkerConfig config, CoordinatorClient* client, ProcessLauncher* launcher,
         const common::Clock& clock = common::SystemClock());
  ~Worker();

  // Blocks until Stop(), or until the worker has been idle for exit_when_idle when that is set
  // (logged "no work for N s: exiting"). Registration and leasing are retried with backoff while
  // the coordinator is unreachable. On Stop(), running trainers checkpoint and exit and their jobs
  // are handed back with reason "worker stopped" (unless !report_stopped). Returns InvalidArgument
  // for a bad config; the coordinator's Unauthenticated or PermissionDenied when it refuses this
  // worker's token (retrying cannot help; running jobs are stopped as on Stop()); OK otherwise.
  absl::Status Run();

  // Thread-safe and idempotent.
  void Stop();

  // Jobs running now (for tests and status lines).
  int running_jobs() const;

 private:
  struct Slot {
    std::unique_ptr<JobRunner> runner;
    std::vector<std::string> devices;  // the job's, in use until the slot is reaped
    std::thread thread;
    bool done = false;  // guarded by the worker's mu_ (a Slot has no mutex of its own to name)
  };

  // Sleeps up to `delay` unless stopped or a job ends; returns false when stopped.
  bool WaitFor(std::chrono::milliseconds delay) ABSL_LOCKS_EXCLUDED(mu_);
  // Whether a job has ended and waits to be reaped.
  bool AnyJobDone() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool Register();
  // The error Run() returns when the coordinator stayed unreachable for the idle limit; `last`
  // is the latest failed call's status. Logs the exit.
  absl::Status GaveUp(const absl::Status& last) const;
  // The configured devices that no running job uses, in configured order.
  std::vector<std::string> FreeDevices() const;
  // Starts the job on its devices, which must be among `free`; reports it failed otherwise.
  void StartJob(JobSpec job, const std::vector<std::string>& free);
  void ReapFinished();

  const WorkerConfig config_;
  CoordinatorClient* const client_;
  ProcessLauncher* const launcher_;
  const common::Clock& clock_;

  std::string worker_id_;  // owned by the Run() thread
  absl::Status refused_;   // the coordinator's refusal of the token; owned by the Run() thread
  std::optional<IdleTimer> idle_;  // with exit_when_idle; owned by the Run() thread
  std::chrono::milliseconds heartbeat_interval_{5'000};
  std::chrono::milliseconds lease_ttl_{0};  // from registration

  mutable common::Mutex mu_;
  std::condition_variable_any cv_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::list<Slot> slots_ ABSL_GUARDED_BY(mu_);  // one per running job
};

}  // namespace onset::worker
