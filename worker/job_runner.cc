#include "worker/job_runner.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <optional>
#include <utility>

#include <spdlog/spdlog.h>

#include "absl/strings/str_cat.h"
#include "base/trainer_contract.h"
#include "common/mutex.h"
#include "worker/attempt_dir.h"
#include "worker/retry.h"
#include "worker/trainer_command.h"
#include "worker/trainer_exit.h"
#include "worker/trainer_lock.h"

namespace onset::worker {
namespace {

// How long a trainer may take to exit once its lease is lost: half the margin the reporter
// keeps before the coordinator's deadline (one heartbeat interval, at most half the TTL).
std::chrono::milliseconds LeaseLossGrace(const JobRunnerConfig& config) {
  return std::min(config.heartbeat_interval, config.lease_ttl / 2) / 2;
}

// Reporting the end of a job (its last metrics, then FinishJob) is retried while the coordinator
// is unreachable, with a delay doubling from kRetryDelay to kMaxRetryDelay, for up to
// JobRunnerConfig::report_deadline: a coordinator restart must not cost recorded points, and
// FinishJob is the one call whose loss costs a whole attempt.
constexpr std::chrono::milliseconds kRetryDelay{250};
constexpr std::chrono::milliseconds kMaxRetryDelay{5'000};

bool IsTransient(const absl::Status& status) {
  return status.code() == absl::StatusCode::kUnavailable ||
         status.code() == absl::StatusCode::kDeadlineExceeded;
}

JobEnd EndOf(JobOutcome outcome) {
  switch (outcome) {
    case JobOutcome::kSucceeded:
      return JobEnd::kSucceeded;
    case JobOutcome::kDiverged:
      return JobEnd::kDiverged;
    case JobOutcome::kHandedBack:
      return JobEnd::kStopped;
    case JobOutcome::kCancelled:
      return JobEnd::kCancelled;
    case JobOutcome::kFailed:
      break;
  }
  return JobEnd::kFailed;
}

}  // namespace

struct JobRunner::Events {
  common::Mutex mu;
  std::condition_variable_any cv;
  std::vector<std::string> lines ABSL_GUARDED_BY(mu);  // stdout lines not yet parsed
  // The trainer has exited and all its lines are in `lines`.
  bool exited ABSL_GUARDED_BY(mu) = false;
  // log_flush_lines stderr lines wait to be relayed.
  bool logs_waiting ABSL_GUARDED_BY(mu) = false;
};

JobRunner::JobRunner(JobRunnerConfig config, std::string worker_id, JobSpec job,
                     CoordinatorClient* client, ProcessLauncher* launcher,
                     const common::Clock& clock)
    : config_(std::move(config)),
      worker_id_(std::move(worker_id)),
      job_(std::move(job)),
      client_(client),
      launcher_(launcher),
      clock_(clock),
      events_(std::make_shared<Events>()) {}

std::string JobRunner::Context() const {
  return absl::StrCat("cell ", job_.cell_id, " attempt ", job_.attempt);
}

void JobRunner::Stop() {
  stop_requested_ = true;
  common::MutexLock lock(&events_->mu);
  events_->cv.notify_all();
}

JobRunOutcome JobRunner::Run() {
  // The coordinator's deadline runs from the claim, which came after the worker asked: so does
  // the worker's view of the lease. A reply that came too late to start safely is left to expire
  // (the coordinator requeues an attempt it never heard from without counting a failure).
  const common::Clock::MonotonicTime lease_start =
      job_.asked_at == common::Clock::MonotonicTime{} ? clock_.MonotonicNow() : job_.asked_at;
  JobReporter reporter({config_.flush_points, config_.log_buffer_lines, config_.log_buffer_bytes,
                        config_.lease_ttl, config_.heartbeat_interval},
                       Context(), worker_id_, job_.lease_id, client_, clock_, lease_start);
  if (reporter.CheckLease()) {
    return LeaveToExpire(JobResult{}, "the lease reply came too late to start the trainer");
  }
  const absl::StatusOr<std::optional<DeviceLaunch>> launch = TrainerLaunch(job_.devices);
  if (!launch.ok()) return FailToStart(std::string(launch.status().message()));
  const absl::StatusOr<AttemptDir> attempt =
      PrepareAttemptDir({config_.work_dir, config_.checkpoint_root}, job_);
  if (!attempt.ok()) return FailToStart(std::string(attempt.status().message()));
  if (attempt->cleared_checkpoint_dir) {
    spdlog::warn("{}: {} held files of an earlier run of another database; deleted them", Context(),
                 attempt->checkpoint_dir.string());
  }
  if (job_.fresh) spdlog::info("{}: a new lineage: starting from scratch", Context());

  // Held by the trainer and whatever it starts, however this worker ends (trainer_lock.h).
  absl::StatusOr<TrainerLock> lock = TrainerLock::Take(attempt->lock_path);
  if (!lock.ok()) return FailToStart(std::string(lock.status().message()));
  // The trainer watches one end: when this process dies, its end closes with it. A socket
  // rather than a pipe, so that a line sent after the trainer exited costs no SIGPIPE.
  int ends[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ends) != 0) {
    return FailToStart(absl::StrCat("cannot make the supervisor socket: ", std::strerror(errno)));
  }
  supervisor_.reset(ends[1]);
  base::UniqueFd watched(ends[0]);
  ::shutdown(watched.get(), SHUT_WR);  // the trainer only listens
  // What is sent must never block this thread: a trainer that does not read (not onset-train)
  // only misses the acknowledgements.
  reporter.OnCheckpointRecorded([this](int64_t tokens) {
    const std::string line =
        std::string(trainer::kSupervisorRecorded) + " " + std::to_string(tokens) + "\n";
    (void)!::send(supervisor_.get(), line.data(), line.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  });
  absl::StatusOr<std::unique_ptr<Process>> trainer =
      StartTrainer(TrainerCommand(config_.trainer_path, config_.threads, *attempt,
                                  job_.trunk_checkpoint, *launch, {lock->fd(), watched.get()}),
                   reporter.logs());
  watched.reset();
  if (!trainer.ok()) {
    return FailToStart(absl::StrCat("cannot start the trainer: ", trainer.status().message()));
  }
  if (absl::Status s = lock->WritePid((*trainer)->pid()); !s.ok()) {
    spdlog::warn("{}: {}", Context(), std::string(s.message()));
  }
  lock->Release();
  spdlog::info("{}: trainer started (pid {}){} in {}", Context(), (*trainer)->pid(),
               DescribeLaunch(job_.devices, *launch), attempt->dir.string());

  const PumpEnd pumped = PumpEvents(reporter);
  const ExitStatus status = EndTrainer(**trainer, pumped);
  supervisor_.reset();
  JobResult result;
  result.exit_code = status.exit_code;
  result.signal = status.signal;
  result.stderr_tail = (*trainer)->StderrTail();
  // Another worker may own the cell by now: report nothing more.
  if (reporter.lease_lost()) return LeaveToExpire(std::move(result), "lease lost");

  // on_exit runs after the last stdout line, so this drains the whole stream.
  std::vector<std::string> lines = TakeLines();
  reporter.TakeLines(&lines);
  if (!DeliverLastMetrics(reporter)) {
    // Finishing now would lose these points: leave the lease to expire instead, and the retry
    // (resuming from the checkpoint) sends them again.
    spdlog::error(
        "{}: {} metric points could not be delivered; not reporting the end, the cell "
        "will be retried",
        Context(), reporter.pending_points());
    return LeaveToExpire(std::move(result), "metrics undeliverable");
  }
  reporter.RelayTheRest();
  if (reporter.lease_lost()) return LeaveToExpire(std::move(result), "lease lost");

  const TrainerExit exit =
      ClassifyTrainerExit(status, pumped == PumpEnd::kCancelled       ? TrainerStop::kCellCancelled
                                  : pumped == PumpEnd::kStopRequested ? TrainerStop::kWorkerStopped
                                                                      : TrainerStop::kNone);
  result.outcome = exit.outcome;
  result.reason = exit.reason;
  if (pumped == PumpEnd::kStalled) {
    result.outcome = JobOutcome::kFailed;
    result.reason = absl::StrCat(
        "no progress: the trainer wrote no metrics line for ",
        std::chrono::duration_cast<std::chrono::seconds>(config_.stall_timeout).count(),
        " s (onset-worker --stall-timeout); stopped it");
  }
  if (exit.outcome == JobOutcome::kHandedBack && !config_.report_stopped) {
    spdlog::info("{}: stopped; left to the coordinator to requeue", Context());
    JobRunOutcome outcome;
    outcome.end = JobEnd::kStopped;
    outcome.result = std::move(result);
    return outcome;
  }
  return ReportEnd(std::move(result), EndOf(exit.outcome));
}

absl::StatusOr<std::unique_ptr<Process>> JobRunner::StartTrainer(SpawnOptions options,
                                                                 std::shared_ptr<LogBuffer> logs) {
  std::shared_ptr<Events> events = events_;
  // The callbacks run on the process's reader threads, which may outlive Run() by a little:
  // they hold what they use.
  const common::Clock* clock = &clock_;
  // A burst wakes the run loop to relay at once rather than at the next flush_interval, so that
  // it is not dropped for want of room meanwhile.
  const size_t log_flush_lines = config_.log_flush_lines;
  options.on_stderr_line = [logs, clock, events, log_flush_lines](const std::string& line) {
    logs->Add(line, clock->WallUnixMs());
    if (logs->pending() >= log_flush_lines) {
      common::MutexLock lock(&events->mu);
      events->logs_waiting = true;
      events->cv.notify_all();
    }
  };
  options.on_stdout_line = [events](std::string line) {
    common::MutexLock lock(&events->mu);
    events->lines.push_back(std::move(line));
    events->cv.notify_all();
  };
  options.on_exit = [events](const ExitStatus&) {
    common::MutexLock lock(&events->mu);
    events->exited = true;
    events->cv.notify_all();
  };
  return launcher_->Spawn(std::move(options));
}

JobRunner::PumpEnd JobRunner::PumpEvents(JobReporter& reporter) {
  auto next_flush = clock_.MonotonicNow() + config_.flush_interval;
  next_heartbeat_ = clock_.MonotonicNow() + config_.heartbeat_interval;
  auto last_output = clock_.MonotonicNow();
  while (true) {
    const bool unsent = reporter.pending_points() > 0 || reporter.logs()->pending() > 0;
    TrainerEvents events =
        WaitForEvents(unsent ? std::min(next_heartbeat_, next_flush) : next_heartbeat_);
    if (!events.lines.empty()) last_output = clock_.MonotonicNow();
    reporter.TakeLines(&events.lines);
    if (events.exited) return PumpEnd::kExited;
    if (config_.stall_timeout.count() > 0 &&
        clock_.MonotonicNow() - last_output >= config_.stall_timeout) {
      return PumpEnd::kStalled;
    }
    if (reporter.CheckLease()) return PumpEnd::kLeaseLost;
    if (stop_requested_) return PumpEnd::kStopRequested;
    if (events.logs_waiting) {
      reporter.FlushLogs();
      if (reporter.lease_lost()) return PumpEnd::kLeaseLost;
    }

    const auto now = clock_.MonotonicNow();
    if ((reporter.pending_points() > 0 || reporter.logs()->pending() > 0) && now >= next_flush) {
      reporter.FlushMetrics();
      reporter.FlushLogs();
      next_flush = now + config_.flush_interval;
      if (reporter.lease_lost()) return PumpEnd::kLeaseLost;
    }
    if (now >= next_heartbeat_) {
      const bool cancelled = reporter.Heartbeat();
      if (reporter.lease_lost()) return PumpEnd::kLeaseLost;
      if (cancelled) return PumpEnd::kCancelled;
      next_heartbeat_ = now + config_.heartbeat_interval;
    }
  }
}

JobRunner::TrainerEvents JobRunner::WaitForEvents(common::Clock::MonotonicTime deadline) {
  const auto wait = std::clamp(
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock_.MonotonicNow()),
      std::chrono::milliseconds(0), config_.max_wait);
  TrainerEvents taken;
  const auto until = std::chrono::steady_clock::now() + wait;
  common::MutexLock lock(&events_->mu);
  while (events_->lines.empty() && !events_->exited && !events_->logs_waiting && !stop_requested_ &&
         events_->cv.wait_until(events_->mu, until) == std::cv_status::no_timeout) {
  }
  taken.lines.swap(events_->lines);
  taken.exited = events_->exited;
  taken.logs_waiting = events_->logs_waiting;
  events_->logs_waiting = false;
  return taken;
}

std::vector<std::string> JobRunner::TakeLines() {
  std::vector<std::string> lines;
  common::MutexLock lock(&events_->mu);
  lines.swap(events_->lines);
  return lines;
}

ExitStatus JobRunner::EndTrainer(Process& trainer, PumpEnd pumped) {
  if (pumped == PumpEnd::kExited) return trainer.Wait();
  spdlog::info("{}: stopping the trainer ({})", Context(),
               pumped == PumpEnd::kLeaseLost   ? "lease lost"
               : pumped == PumpEnd::kCancelled ? "cell cancelled"
               : pumped == PumpEnd::kStalled   ? "no progress"
                                               : "worker stopping");
  // A lost lease leaves only the stop margin (one heartbeat interval) before the coordinator may
  // lease the cell again: the trainer gets half of it to exit, then it is killed, so that it is
  // gone before another can start. Its newest periodic checkpoint is what the next one resumes.
  const std::chrono::milliseconds grace =
      pumped == PumpEnd::kLeaseLost && config_.lease_ttl.count() > 0
          ? std::min(config_.terminate_grace, LeaseLossGrace(config_))
          : config_.terminate_grace;
  return trainer.Terminate(grace);
}

bool JobRunner::DeliverLastMetrics(JobReporter& reporter) {
  // The lease is kept alive meanwhile: a slow coordinator must not cost the attempt.
  return RetryWithBackoff(
      clock_, {kRetryDelay, kMaxRetryDelay, config_.report_deadline},
      [&] {
        reporter.FlushMetrics();
        if (reporter.pending_points() == 0 || reporter.lease_lost()) return TryResult::kDone;
        if (clock_.MonotonicNow() >= next_heartbeat_) {
          reporter.Heartbeat();
          next_heartbeat_ = clock_.MonotonicNow() + config_.heartbeat_interval;
          if (reporter.lease_lost()) return TryResult::kDone;
        }
        // A stopping worker does not wait for the coordinator.
        return stop_requested_ ? TryResult::kGiveUp : TryResult::kAgain;
      },
      [this](std::chrono::milliseconds delay) { WaitBeforeRetry(delay); });
}

JobRunOutcome JobRunner::ReportEnd(JobResult result, JobEnd end) {
  JobRunOutcome outcome;
  outcome.end = end;
  outcome.result = std::move(result);
  RetryWithBackoff(
      clock_, {kRetryDelay, kMaxRetryDelay, config_.report_deadline},
      [&] {
        outcome.finish_status = client_->Finish(worker_id_, job_.lease_id, outcome.result);
        // A write the coordinator's database failed (INTERNAL: an I/O error, a full disk) is
        // tried again too: the attempt has not ended there, and giving up costs the cell an
        // expired lease and a rerun.
        const bool again = IsTransient(outcome.finish_status) ||
                           outcome.finish_status.code() == absl::StatusCode::kInternal;
        if (!again) return TryResult::kDone;
        // A stopping worker tries once: its coordinator may be stopping too.
        return end == JobEnd::kStopped ? TryResult::kGiveUp : TryResult::kAgain;
      },
      [this](std::chrono::milliseconds delay) { WaitBeforeRetry(delay); });
  if (!outcome.finish_status.ok()) {
    spdlog::error("{}: could not report the outcome: {}", Context(),
                  outcome.finish_status.ToString());
  }
  if (outcome.result.outcome == JobOutcome::kFailed) {
    spdlog::warn("{}: failed: {}", Context(), outcome.result.reason);
  } else {
    spdlog::info("{}: {}", Context(),
                 outcome.result.succeeded() ? "succeeded" : outcome.result.reason);
  }
  return outcome;
}

JobRunOutcome JobRunner::FailToStart(std::string reason) {
  JobResult result;
  result.outcome = JobOutcome::kFailed;
  result.reason = std::move(reason);
  return ReportEnd(std::move(result), JobEnd::kFailed);
}

JobRunOutcome JobRunner::LeaveToExpire(JobResult result, std::string reason) {
  JobRunOutcome outcome;
  outcome.end = JobEnd::kLeaseLost;
  outcome.result = std::move(result);
  outcome.result.reason = std::move(reason);
  return outcome;
}

void JobRunner::WaitBeforeRetry(std::chrono::milliseconds delay) const {
  WaitOnClock(clock_, delay, config_.max_wait);
}

}  // namespace onset::worker
