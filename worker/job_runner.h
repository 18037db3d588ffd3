// Runs one leased job: writes the cell config, spawns the trainer, relays its metrics in batches,
// heartbeats with progress and reports the outcome.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "base/unique_fd.h"
#include "common/clock.h"
#include "worker/coordinator_client.h"
#include "worker/job_reporter.h"
#include "worker/log_buffer.h"
#include "worker/process_launcher.h"

namespace onset::worker {

struct JobRunnerConfig {
  std::string trainer_path;     // the onset-train executable
  std::string work_dir;         // attempts run in <work_dir>/<cell_id>/attempt-<n>/
  std::string checkpoint_root;  // where else a job's checkpoints may be (attempt_dir.h)
  int threads = 1;              // --threads and OMP_NUM_THREADS for the trainer
  std::chrono::milliseconds heartbeat_interval{5'000};  // as the coordinator asks
  // The coordinator's lease TTL: a job whose heartbeats fail for nearly as long (one heartbeat
  // interval less) stops its trainer and reports nothing more (JobReporterOptions::lease_ttl).
  // Zero: no such limit.
  std::chrono::milliseconds lease_ttl{0};
  // A trainer that writes no metrics line for this long (it heartbeats through the worker, but
  // makes no progress: a hung read, a deadlocked rank) is stopped and its attempt fails with
  // "no progress". Zero: never.
  std::chrono::milliseconds stall_timeout{0};
  std::chrono::milliseconds flush_interval{1'000};  // metric points wait at most this long
  size_t flush_points = 500;                        // or until this many are pending
  // The trainer's stderr lines held until relayed (log_buffer.h): at most this many, and bytes.
  size_t log_buffer_lines = LogBuffer::kDefaultMaxLines;
  size_t log_buffer_bytes = LogBuffer::kDefaultMaxBytes;
  // Once this many lines wait they are relayed at once, not at the next flush_interval.
  size_t log_flush_lines = 2'000;
  // SIGTERM -> SIGKILL delay; after a lost lease at most half a heartbeat interval, so that the
  // trainer is gone before the coordinator can lease its cell again.
  std::chrono::milliseconds terminate_grace{10'000};
  // How long the end of a job (last metrics, FinishJob) is retried while the coordinator is
  // unreachable (e.g. restarting).
  std::chrono::milliseconds report_deadline{10 * 60'000};
  // Whether Stop() hands the job back ("worker stopped"). Off in the embedded single-machine
  // mode, whose coordinator stops too and requeues running cells when it starts again.
  bool report_stopped = true;
  // Upper bound on one wait of the run loop, so that an injected clock that jumps is noticed.
  std::chrono::milliseconds max_wait{100};
};

// What became of the job, for the worker's log and tests.
enum class JobEnd {
  kSucceeded,  // trainer exited 0, FinishJob(succeeded) sent
  kFailed,     // trainer failed (or could not start), FinishJob(failed) sent
  kDiverged,   // trainer stopped on a non-finite loss, FinishJob(diverged) sent
  kLeaseLost,  // the coordinator no longer knows the lease; trainer terminated, no FinishJob
  kStopped,    // Stop() was called; the trainer was asked to checkpoint and exit (SIGTERM),
               // or another's signal made it do so (exit 4); FinishJob(handed back) sent when
               // report_stopped
  kCancelled,  // the heartbeat said the cell was cancelled; trainer stopped likewise,
               // FinishJob(cancelled) sent
};

struct JobRunOutcome {
  JobEnd end = JobEnd::kFailed;
  JobResult result;            // what was (or would have been) reported
  absl::Status finish_status;  // the FinishJob call's status, OK when not sent
};

// One JobRunner per attempt. Run() is called once, on the thread that owns the runner; Stop() may
// be called from any thread. `client`, `launcher` and `clock` are not owned and must outlive the
// runner. The clock paces metric batches and heartbeats (its monotonic time only).
class JobRunner {
 public:
  JobRunner(JobRunnerConfig config, std::string worker_id, JobSpec job, CoordinatorClient* client,
            ProcessLauncher* launcher, const common::Clock& clock = common::SystemClock());

  // Blocks until the trainer has exited and the outcome has been reported.
  JobRunOutcome Run();

  // Asks Run() to stop the trainer (SIGTERM: it checkpoints and exits) and hand the job back
  // (reason "worker stopped"): the coordinator queues the cell again without counting a failure.
  void Stop();

  const JobSpec& job() const { return job_; }

 private:
  // How the run loop ended.
  enum class PumpEnd {
    kExited,         // the trainer exited (the lease may have been lost meanwhile)
    kLeaseLost,      // the coordinator no longer knows the lease
    kCancelled,      // a heartbeat said the cell was cancelled
    kStopRequested,  // Stop() was called
    kStalled,        // the trainer wrote no metrics line for stall_timeout
  };
  // What the trainer sent since the last look.
  struct TrainerEvents {
    std::vector<std::string> lines;  // stdout lines, in order
    bool exited = false;             // it has exited and every line it wrote is in `lines`
    bool logs_waiting = false;       // log_flush_lines stderr lines wait to be relayed
  };

  // "cell <id> attempt <n>", the prefix of every log line about this job.
  std::string Context() const;

  // Spawns the trainer with `options`, its stdout lines and exit waking the run loop and its
  // stderr lines going to `logs`.
  absl::StatusOr<std::unique_ptr<Process>> StartTrainer(SpawnOptions options,
                                                        std::shared_ptr<LogBuffer> logs);
  // Relays the trainer's output and heartbeats until it exits, the lease is lost, the cell is
  // cancelled or Stop() is called.
  PumpEnd PumpEvents(JobReporter& reporter);
  // Waits until the trainer sends something, Stop() is called or `deadline` passes (on the
  // injected clock, looked at every max_wait).
  TrainerEvents WaitForEvents(common::Clock::MonotonicTime deadline);
  // The stdout lines not yet taken.
  std::vector<std::string> TakeLines();
  // Waits for a trainer that exited, or terminates one that runs; how it ended.
  ExitStatus EndTrainer(Process& trainer, PumpEnd pumped);
  // Sends the points still pending, heartbeating meanwhile, retried while the coordinator is
  // unreachable; false when they could not all be delivered.
  bool DeliverLastMetrics(JobReporter& reporter);
  // Reports the end with FinishJob, retried while the coordinator is unreachable.
  JobRunOutcome ReportEnd(JobResult result, JobEnd end);
  JobRunOutcome FailToStart(std::string reason);
  // Reports nothing: the lease is lost, or left to expire so that the cell runs again.
  JobRunOutcome LeaveToExpire(JobResult result, std::string reason);
  // Waits `delay` of the injected clock, between tries of a retry.
  void WaitBeforeRetry(std::chrono::milliseconds delay) const;

  const JobRunnerConfig config_;
  const std::string worker_id_;
  const JobSpec job_;
  CoordinatorClient* const client_;
  ProcessLauncher* const launcher_;
  const common::Clock& clock_;

  std::atomic<bool> stop_requested_{false};
  // Wakes the run loop: new stdout lines, the trainer's exit, Stop().
  struct Events;
  std::shared_ptr<Events> events_;
  // When the lease is next renewed, while the trainer runs and while its last points wait.
  common::Clock::MonotonicTime next_heartbeat_{};
  // This worker's end of the socket the trainer watches (--supervisor-fd), open while it runs.
  base::UniqueFd supervisor_;
};

}  // namespace onset::worker
