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

// onset-train's exit status for a run that diverged: a result of its own, not a failure. It is
// reported as JobOutcome::kDiverged (FinishJob outcome diverged, JobEnd::kDiverged), and the
// coordinator records the cell as diverged and never retries it.
constexpr int kExitDiverged = 3;
// onset-train's exit status after a SIGTERM or SIGINT made it checkpoint and stop.
constexpr int kExitStopped = 4;
// FinishJob is the one call whose loss costs a whole attempt: transient failures are retried.
// Reporting the end of a job (its last metrics, then FinishJob) is retried while the
// coordinator is unreachable, with a delay doubling from kRetryDelay to kMaxRetryDelay, for up
// to JobRunnerConfig::report_deadline: a coordinator restart must not cost recorded points.
constexpr std::chrono::milliseconds kRetryDelay{250};
constexpr std::chrono::milliseconds kMaxRetryDelay{5'000};
// Log lines per AppendLogs call, and bytes of text: with lines of up to 8 KiB a call stays far
// below gRPC's 4 MiB message limit.
constexpr size_t kLogBatch = 2'000;
constexpr size_t kLogBatchBytes = 1 << 20;

bool IsLeaseLost(const absl::Status& status) {
  return status.code() == absl::StatusCode::kFailedPrecondition;
}

bool IsTransient(const absl::Status& status) {
  return status.code() == absl::StatusCode::kUnavailable ||
         status.code() == absl::StatusCode::kDeadlineExceeded;
}

// A refusal that sending the same request again cannot change: the request is dropped, not
// retried.
bool IsPermanent(const absl::Status& status) {
  return status.code() == absl::StatusCode::kInvalidArgument ||
         status.code() == absl::StatusCode::kOutOfRange ||
         status.code() == absl::StatusCode::kResourceExhausted;
}

// What the worker adds to a cell's log (between the trainer's lines) starts with this.
constexpr char kWorkerNote[] = "onset-worker: ";

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
  bool logs_waiting = false;       // log_flush_lines stderr lines wait to be relayed
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
      // A stopping worker tries once: its coordinator may be stopping too. A write the
      // coordinator's database failed (INTERNAL: an I/O error, a full disk) is tried again too:
      // the attempt has not ended there, and giving up costs the cell an expired lease and a
      // rerun.
      const bool again = IsTransient(outcome.finish_status) ||
                         outcome.finish_status.code() == absl::StatusCode::kInternal;
      if (!again || end == JobEnd::kStopped ||
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
  auto logs = std::make_shared<LogBuffer>(config_.log_buffer_lines, config_.log_buffer_bytes);
  const common::Clock* clock = &clock_;
  // A burst wakes the run loop to relay at once rather than at the next flush_interval, so that
  // it is not dropped for want of room meanwhile.
  const size_t log_flush_lines = config_.log_flush_lines;
  options.on_stderr_line = [logs, clock, events, log_flush_lines](const std::string& line) {
    logs->Add(line, clock->WallUnixMs());
    if (logs->pending() >= log_flush_lines) {
      std::lock_guard<std::mutex> lock(events->mu);
      events->logs_waiting = true;
      events->cv.notify_all();
    }
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
  // Adds a line of the worker's own to the cell's log, for whoever reads it with onset logs,
  // and says it in the worker's log too.
  auto note = [&](const std::string& text) {
    spdlog::warn("{}: {}", Context(), text);
    logs->Add(kWorkerNote + text, clock_.WallUnixMs());
  };
  bool drop_noted = false;         // the first dropped metric point was noted in the cell's log
  int64_t refused_points = 0;      // points the coordinator refused for good
  std::string refused_reason;      // and why, the first time

  // Sends the pending points, at most flush_points per call (so that a backlog never makes a
  // request too large). A transient failure keeps the rest for the next try (the coordinator
  // de-duplicates re-sent points); a permanent refusal drops that call's points, counted, so
  // that one bad batch is never re-sent forever.
  auto flush = [&]() {
    const size_t per_call = std::max<size_t>(1, config_.flush_points);
    while (!pending.empty() && !lease_lost) {
      const size_t n = std::min(pending.size(), per_call);
      std::vector<MetricPoint> batch(pending.begin(), pending.begin() + n);
      absl::Status s = client_->ReportMetrics(worker_id_, job_.lease_id, batch);
      if (IsLeaseLost(s)) {
        lease_lost = true;
        spdlog::warn("{}: lease lost: {}", Context(), s.ToString());
        return;
      }
      if (!s.ok() && !IsPermanent(s)) {
        spdlog::warn("{}: reporting {} metric points failed: {}", Context(), pending.size(),
                     s.ToString());
        return;
      }
      if (!s.ok()) {
        spdlog::error("{}: the coordinator refused {} metric points: {}", Context(), n,
                      s.ToString());
        if (refused_points == 0) refused_reason = std::string(s.message());
        refused_points += static_cast<int64_t>(n);
      }
      pending.erase(pending.begin(), pending.begin() + n);
    }
  };
  // Sends the trainer's stderr lines that are waiting, in calls bounded in lines and bytes.
  // Best effort: a failure keeps them for the next try (the buffer is bounded), a permanent
  // refusal drops that call's lines, and they never hold up the job or its outcome.
  int64_t log_calls_failed = 0;   // AppendLogs calls that failed (lines kept for a retry)
  int64_t log_lines_refused = 0;  // lines of calls the coordinator refused for good
  std::string last_log_error;
  auto flush_logs = [&]() {
    while (logs->pending() > 0 && !lease_lost) {
      std::vector<LogLine> batch = logs->Take(kLogBatch, kLogBatchBytes);
      absl::Status s = client_->AppendLogs(worker_id_, job_.lease_id, batch);
      if (s.ok()) continue;
      if (IsLeaseLost(s)) {
        lease_lost = true;
        spdlog::warn("{}: lease lost: {}", Context(), s.ToString());
        return;
      }
      last_log_error = s.ToString();
      if (IsPermanent(s)) {
        spdlog::error("{}: the coordinator refused {} log lines: {}", Context(), batch.size(),
                      last_log_error);
        log_lines_refused += static_cast<int64_t>(batch.size());
        continue;
      }
      spdlog::warn("{}: relaying {} log lines failed: {}", Context(), batch.size(),
                   last_log_error);
      ++log_calls_failed;
      logs->PutBack(std::move(batch));
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
    if (!drop_noted && parser.dropped_points() > 0) {
      note("dropped a metric point: " + parser.first_drop_reason() +
           " (later ones are counted, the total comes when the attempt ends)");
      drop_noted = true;
    }
  };
  // Renews the lease with the progress so far (sets lease_lost when it is gone); true when the
  // coordinator says the cell was cancelled.
  auto heartbeat = [&]() {
    absl::StatusOr<HeartbeatReply> reply = client_->Heartbeat(
        worker_id_, job_.lease_id, Progress{parser.tokens_done(), parser.tokens_per_second()});
    if (IsLeaseLost(reply.status())) {
      lease_lost = true;
      spdlog::warn("{}: lease lost: {}", Context(), reply.status().ToString());
      return false;
    }
    if (!reply.ok()) spdlog::warn("{}: heartbeat failed: {}", Context(), reply.status().ToString());
    return reply.ok() && reply->cancel;
  };

  auto next_flush = clock_.MonotonicNow() + config_.flush_interval;
  auto next_heartbeat = clock_.MonotonicNow() + config_.heartbeat_interval;
  bool exited = false;
  bool logs_waiting = false;
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
        return !events_->lines.empty() || events_->exited || events_->logs_waiting ||
               stop_requested_;
      });
      lines.swap(events_->lines);
      exited = events_->exited;
      logs_waiting = events_->logs_waiting;
      events_->logs_waiting = false;
    }
    take_lines(&lines);
    if (lease_lost || exited || stop_requested_) break;
    if (logs_waiting) {
      flush_logs();
      if (lease_lost) break;
    }

    const auto now = clock_.MonotonicNow();
    if ((!pending.empty() || logs->pending() > 0) && now >= next_flush) {
      flush();
      flush_logs();
      next_flush = now + config_.flush_interval;
      if (lease_lost) break;
    }
    if (now >= next_heartbeat) {
      cancelled = heartbeat();
      if (lease_lost || cancelled) break;
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
  {
    // The lease is kept alive meanwhile: a slow coordinator must not cost the attempt.
    const auto give_up = std::chrono::steady_clock::now() + config_.report_deadline;
    for (auto delay = kRetryDelay; !pending.empty() && !lease_lost;
         delay = std::min(delay * 2, kMaxRetryDelay)) {
      flush();
      if (pending.empty() || lease_lost) break;
      if (clock_.MonotonicNow() >= next_heartbeat) {
        heartbeat();
        next_heartbeat = clock_.MonotonicNow() + config_.heartbeat_interval;
        if (lease_lost) break;
      }
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
    // What became of the trainer's metrics output, where whoever reads the log will see it.
    if (parser.malformed_lines() > 0) {
      note(absl::StrCat("skipped ", parser.malformed_lines(),
                        " metrics lines that were not onset-train's JSON"));
    }
    if (parser.dropped_points() > 0) {
      note(absl::StrCat("dropped ", parser.dropped_points(),
                        " metric points: first: ", parser.first_drop_reason()));
    }
    if (refused_points > 0) {
      note(absl::StrCat("the coordinator refused ", refused_points,
                        " metric points: first: ", refused_reason));
    }
    // The stderr reader has finished by now (the process was reaped), so this is all of it.
    flush_logs();
    if (logs->pending() > 0) flush_logs();  // one more try for what a hiccup kept back
    if (logs->dropped() > 0) {
      // Said as it happened: the buffer was full, because the trainer wrote faster than the
      // lines were relayed or because relaying failed (then how often, and the last error).
      std::string why = absl::StrCat(
          logs->dropped(), " trainer log lines were dropped, the oldest first: the worker holds at "
          "most ", logs->max_lines(), " unsent lines (", logs->max_bytes() >> 20, " MiB) and ");
      if (log_calls_failed > 0) {
        absl::StrAppend(&why, log_calls_failed, " calls relaying them failed (the last: ",
                        last_log_error, ")");
      } else {
        absl::StrAppend(&why, "the trainer wrote them faster than the coordinator took them");
      }
      note(why);
      flush_logs();
    }
    if (log_lines_refused > 0) {
      spdlog::warn("{}: the coordinator refused {} trainer log lines (the last error: {})",
                   Context(), log_lines_refused, last_log_error);
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
