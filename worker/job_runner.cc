#include "worker/job_runner.h"

#include <algorithm>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include <spdlog/spdlog.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/path_under_root.h"
#include "worker/devices.h"
#include "worker/log_buffer.h"
#include "worker/metrics_parser.h"

namespace onset::worker {
namespace {

namespace fs = std::filesystem;

// onset-train's exit status for a run that diverged: a result, reported as a failure for now.
constexpr int kExitDiverged = 3;
// onset-train's exit status after a SIGTERM or SIGINT made it checkpoint and stop.
constexpr int kExitStopped = 4;
// FinishJob is the one call whose loss costs a whole attempt: transient failures are retried.
// Reporting the end of a job (its last metrics, then FinishJob) is retried while the
// coordinator is unreachable, with a delay doubling from kRetryDelay to kMaxRetryDelay, for up
// to JobRunnerConfig::report_deadline: a coordinator restart must not cost recorded points.
constexpr std::chrono::milliseconds kRetryDelay{250};
constexpr std::chrono::milliseconds kMaxRetryDelay{5'000};
// Log lines per AppendLogs call.
constexpr size_t kLogBatch = 2'000;

bool IsLeaseLost(const absl::Status& status) {
  return status.code() == absl::StatusCode::kFailedPrecondition;
}

bool IsTransient(const absl::Status& status) {
  return status.code() == absl::StatusCode::kUnavailable ||
         status.code() == absl::StatusCode::kDeadlineExceeded;
}

absl::Status WriteFile(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) return absl::InternalError(absl::StrCat("cannot write ", path.string()));
  return absl::OkStatus();
}

}  // namespace

struct JobRunner::Events {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::string> lines;  // stdout lines not yet parsed
  bool exited = false;             // the trainer has exited and all its lines are in `lines`
};

JobRunner::JobRunner(JobRunnerConfig config, std::string worker_id, JobSpec job,
                     CoordinatorClient* client, ProcessLauncher* launcher, const common::Clock& clock)
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
  std::lock_guard<std::mutex> lock(events_->mu);
  events_->cv.notify_all();
}

JobRunOutcome JobRunner::Run() {
  JobRunOutcome outcome;

  // Sends FinishJob, retrying transient failures unless the worker is stopping.
  auto finish = [&](JobEnd end) {
    outcome.end = end;
    const auto give_up = std::chrono::steady_clock::now() + config_.report_deadline;
    for (auto delay = kRetryDelay;; delay = std::min(delay * 2, kMaxRetryDelay)) {
      outcome.finish_status = client_->Finish(worker_id_, job_.lease_id, outcome.result);
      // A stopping worker tries once: its coordinator may be stopping too.
      if (!IsTransient(outcome.finish_status) || end == JobEnd::kStopped ||
          std::chrono::steady_clock::now() + delay > give_up) {
        break;
      }
      std::this_thread::sleep_for(delay);
    }
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
  };
  auto fail_to_start = [&](const std::string& reason) {
    outcome.result.outcome = JobOutcome::kFailed;
    outcome.result.reason = reason;
    return finish(JobEnd::kFailed);
  };

  // One rank per device: CUDA_VISIBLE_DEVICES shows the trainer its GPUs only (none for CPU
  // slots), so its ranks use cuda:0..N-1 of what it sees.
  std::optional<DeviceLaunch> launch;
  if (!job_.devices.empty()) {
    absl::StatusOr<DeviceLaunch> on = LaunchOn(job_.devices);
    if (!on.ok()) {
      return fail_to_start(absl::StrCat("cannot run on the devices the coordinator gave (",
                                        absl::StrJoin(job_.devices, ","),
                                        "): ", on.status().message()));
    }
    launch = *on;
  }

  // The cell id names directories under the work directory (and the checkpoints that a fresh
  // start deletes): it must be one path component.
  if (!common::IsSafePathComponent(job_.cell_id)) {
    return fail_to_start("cell id '" + job_.cell_id + "' cannot name a directory under " +
                         config_.work_dir);
  }
  // Absolute: the trainer runs in this directory and gets the config's path.
  std::error_code ec;
  const fs::path dir = fs::absolute(fs::path(config_.work_dir) / job_.cell_id /
                                    absl::StrCat("attempt-", job_.attempt), ec);
  if (ec) return fail_to_start(absl::StrCat("bad work_dir ", config_.work_dir, ": ", ec.message()));
  fs::create_directories(dir, ec);
  if (ec) return fail_to_start(absl::StrCat("cannot create ", dir.string(), ": ", ec.message()));
  const fs::path config_path = dir / "config.json";
  if (auto s = WriteFile(config_path, job_.config_json); !s.ok()) {
    return fail_to_start(std::string(s.message()));
  }

  // Checkpoints belong to the cell, not the attempt: a later attempt of the same cell on this
  // machine (a requeue after a lost lease, or `onset run` resumed after an interrupt) continues
  // from the newest valid one instead of starting over.
  const fs::path checkpoint_dir = job_.checkpoint_dir.empty()
                                      ? dir.parent_path() / "checkpoints"
                                      : fs::path(job_.checkpoint_dir);
  if (job_.fresh && checkpoint_dir.filename() != job_.cell_id &&
      checkpoint_dir.filename() != "checkpoints") {
    // The coordinator names the directory; delete only what is recognisably a cell's.
    return fail_to_start("refusing to discard " + checkpoint_dir.string() +
                         ": not a checkpoint directory of cell " + job_.cell_id);
  }
  if (job_.fresh) {
    // `onset rerun --fresh`: this attempt starts from scratch.
    fs::remove_all(checkpoint_dir, ec);
    if (ec) {
      return fail_to_start(absl::StrCat("cannot discard the checkpoints in ",
                                        checkpoint_dir.string(), ": ", ec.message()));
    }
    spdlog::info("{}: starting fresh: discarded {}", Context(), checkpoint_dir.string());
  }

  SpawnOptions options;
  options.program = config_.trainer_path;
  options.args = {"--config",         config_path.string(),    "--threads",
                  std::to_string(config_.threads), "--checkpoint-dir", checkpoint_dir.string(),
                  "--resume"};
  options.env["OMP_NUM_THREADS"] = std::to_string(config_.threads);
  options.env["MKL_NUM_THREADS"] = std::to_string(config_.threads);
  std::string on_devices;
  if (launch) {
    options.args.insert(options.args.end(), {"--device", launch->device});
    if (launch->nproc > 1) {
      options.args.insert(options.args.end(), {"--nproc", std::to_string(launch->nproc)});
    }
    options.env["CUDA_VISIBLE_DEVICES"] = launch->cuda_visible_devices;
    on_devices = absl::StrCat(" on ", absl::StrJoin(job_.devices, ","), " (--device ",
                              launch->device, " --nproc ", launch->nproc, ")");
  }
  options.working_dir = dir.string();
  std::shared_ptr<Events> events = events_;
  // Shared with the stderr reader thread, which may outlive this frame by a little.
  auto logs = std::make_shared<LogBuffer>();
  const common::Clock* clock = &clock_;
  options.on_stderr_line = [logs, clock](const std::string& line) {
    logs->Add(line, clock->WallUnixMs());
  };
  options.on_stdout_line = [events](std::string line) {
    std::lock_guard<std::mutex> lock(events->mu);
    events->lines.push_back(std::move(line));
    events->cv.notify_all();
  };
  options.on_exit = [events](const ExitStatus&) {
    std::lock_guard<std::mutex> lock(events->mu);
    events->exited = true;
    events->cv.notify_all();
  };
  absl::StatusOr<std::unique_ptr<Process>> spawned = launcher_->Spawn(std::move(options));
  if (!spawned.ok()) {
    return fail_to_start(absl::StrCat("cannot start the trainer: ", spawned.status().message()));
  }
  std::unique_ptr<Process> process = std::move(*spawned);
  spdlog::info("{}: trainer started (pid {}){} in {}", Context(), process->pid(), on_devices,
               dir.string());

  MetricsParser parser(Context());
  std::vector<MetricPoint> pending;
  bool lease_lost = false;
  bool cancelled = false;

  auto flush = [&]() {
    if (pending.empty()) return;
    absl::Status s = client_->ReportMetrics(worker_id_, job_.lease_id, pending);
    if (s.ok()) {
      pending.clear();
    } else if (IsLeaseLost(s)) {
      lease_lost = true;
      spdlog::warn("{}: lease lost: {}", Context(), s.ToString());
    } else {
      // Kept and re-sent with the next batch; the coordinator de-duplicates.
      spdlog::warn("{}: reporting {} metric points failed: {}", Context(), pending.size(),
                   s.ToString());
    }
  };
  // Sends the trainer's stderr lines that are waiting. Best effort: a failure keeps them for the
  // next try (the buffer is bounded), and they never hold up the job or its outcome.
  auto flush_logs = [&]() {
    while (logs->pending() > 0 && !lease_lost) {
      std::vector<LogLine> batch = logs->Take(kLogBatch);
      absl::Status s = client_->AppendLogs(worker_id_, job_.lease_id, batch);
      if (s.ok()) continue;
      if (IsLeaseLost(s)) {
        lease_lost = true;
        spdlog::warn("{}: lease lost: {}", Context(), s.ToString());
      } else {
        spdlog::warn("{}: relaying {} log lines failed: {}", Context(), batch.size(),
                     s.ToString());
        logs->PutBack(std::move(batch));
      }
      return;
    }
  };
  // Parses lines, sending a batch whenever flush_points are pending.
  auto take_lines = [&](std::vector<std::string>* lines) {
    for (const std::string& line : *lines) {
      parser.Consume(line, &pending);
      if (pending.size() >= config_.flush_points && !lease_lost) flush();
    }
    lines->clear();
  };

  auto next_flush = clock_.MonotonicNow() + config_.flush_interval;
  auto next_heartbeat = clock_.MonotonicNow() + config_.heartbeat_interval;
  bool exited = false;
  std::vector<std::string> lines;
  while (true) {
    {
      std::unique_lock<std::mutex> lock(events_->mu);
      auto deadline = pending.empty() && logs->pending() == 0
                          ? next_heartbeat
                          : std::min(next_heartbeat, next_flush);
      auto wait = std::clamp(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock_.MonotonicNow()),
                             std::chrono::milliseconds(0), config_.max_wait);
      events_->cv.wait_for(lock, wait, [&] {
        return !events_->lines.empty() || events_->exited || stop_requested_;
      });
      lines.swap(events_->lines);
      exited = events_->exited;
    }
    take_lines(&lines);
    if (lease_lost || exited || stop_requested_) break;

    const auto now = clock_.MonotonicNow();
    if ((!pending.empty() || logs->pending() > 0) && now >= next_flush) {
      flush();
      flush_logs();
      next_flush = now + config_.flush_interval;
      if (lease_lost) break;
    }
    if (now >= next_heartbeat) {
      absl::StatusOr<HeartbeatReply> reply = client_->Heartbeat(
          worker_id_, job_.lease_id, Progress{parser.tokens_done(), parser.tokens_per_second()});
      if (IsLeaseLost(reply.status())) {
        lease_lost = true;
        spdlog::warn("{}: lease lost: {}", Context(), reply.status().ToString());
        break;
      }
      if (!reply.ok()) spdlog::warn("{}: heartbeat failed: {}", Context(), reply.status().ToString());
      if (reply.ok() && reply->cancel) {
        cancelled = true;
        break;
      }
      next_heartbeat = now + config_.heartbeat_interval;
    }
  }

  const bool stopped = !exited && !lease_lost && !cancelled;
  if (!exited) {
    spdlog::info("{}: stopping the trainer ({})", Context(),
                 lease_lost ? "lease lost" : cancelled ? "cell cancelled" : "worker stopping");
  }
  const ExitStatus status = exited ? process->Wait() : process->Terminate(config_.terminate_grace);

  outcome.result.exit_code = status.exit_code;
  outcome.result.signal = status.signal;
  outcome.result.stderr_tail = process->StderrTail();
  if (lease_lost) {
    // Another worker may own the cell by now: report nothing more.
    outcome.end = JobEnd::kLeaseLost;
    outcome.result.reason = "lease lost";
    return outcome;
  }

  // on_exit runs after the last stdout line, so this drains the whole stream.
  {
    std::lock_guard<std::mutex> lock(events_->mu);
    lines.swap(events_->lines);
  }
  take_lines(&lines);
  if (parser.malformed_lines() > 0) {
    spdlog::warn("{}: {} malformed metrics lines skipped", Context(), parser.malformed_lines());
  }
  {
    const auto give_up = std::chrono::steady_clock::now() + config_.report_deadline;
    for (auto delay = kRetryDelay; !pending.empty() && !lease_lost;
         delay = std::min(delay * 2, kMaxRetryDelay)) {
      flush();
      if (pending.empty() || lease_lost) break;
      if (stop_requested_ || std::chrono::steady_clock::now() + delay > give_up) {
        // Finishing now would lose these points: leave the lease to expire instead, and the
        // retry (resuming from the checkpoint) sends them again.
        spdlog::error("{}: {} metric points could not be delivered; not reporting the end, the "
                      "cell will be retried", Context(), pending.size());
        outcome.end = JobEnd::kLeaseLost;
        outcome.result.reason = "metrics undeliverable";
        return outcome;
      }
      std::this_thread::sleep_for(delay);
    }
  }
  if (!lease_lost) {
    // The stderr reader has finished by now (the process was reaped), so this is all of it.
    flush_logs();
    if (logs->pending() > 0) flush_logs();  // one more try for what a hiccup kept back
    if (logs->dropped() > 0) {
      spdlog::warn("{}: {} trainer log lines were dropped while the coordinator was unreachable",
                   Context(), logs->dropped());
    }
  }
  if (lease_lost) {
    outcome.end = JobEnd::kLeaseLost;
    outcome.result.reason = "lease lost";
    return outcome;
  }

  if (cancelled) {
    outcome.result.outcome = JobOutcome::kCancelled;
    outcome.result.reason = "cancelled";
    return finish(JobEnd::kCancelled);
  }
  // Stopped by this worker, or by someone else after which the trainer checkpointed: a cluster's
  // scheduler signals every process of a job it preempts, the trainer often first. Either way the
  // cell is handed back, not failed.
  const bool stopped_by_others = status.Exited() && status.exit_code == kExitStopped;
  if (stopped || stopped_by_others) {
    outcome.result.outcome = JobOutcome::kHandedBack;
    outcome.result.reason = stopped ? "worker stopped" : "trainer stopped by a signal";
    if (!config_.report_stopped) {
      outcome.end = JobEnd::kStopped;
      spdlog::info("{}: stopped; left to the coordinator to requeue", Context());
      return outcome;
    }
    return finish(JobEnd::kStopped);
  }
  if (status.Succeeded()) {
    outcome.result.outcome = JobOutcome::kSucceeded;
    return finish(JobEnd::kSucceeded);
  }
  if (status.Exited() && status.exit_code == kExitDiverged) {
    outcome.result.outcome = JobOutcome::kDiverged;
    outcome.result.reason = "diverged: the training loss was not finite";
    return finish(JobEnd::kDiverged);
  }
  outcome.result.outcome = JobOutcome::kFailed;
  outcome.result.reason = status.ToString();
  return finish(JobEnd::kFailed);
}

}  // namespace onset::worker
