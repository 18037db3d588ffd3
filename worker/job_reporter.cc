#include "worker/job_reporter.h"

#include <algorithm>
#include <utility>

#include <spdlog/spdlog.h>

#include "absl/strings/str_cat.h"
#include "base/metric_names.h"

namespace onset::worker {
namespace {

// Log lines per AppendLogs call, and bytes of text: with lines of up to 8 KiB a call stays far
// below gRPC's 4 MiB message limit.
constexpr size_t kLogBatch = 2'000;
constexpr size_t kLogBatchBytes = 1 << 20;

// What the worker adds to a cell's log (between the trainer's lines) starts with this.
constexpr char kWorkerNote[] = "onset-worker: ";

// A refusal that sending the same request again cannot change: the request is dropped, not
// retried.
bool IsPermanent(const absl::Status& status) {
  return status.code() == absl::StatusCode::kInvalidArgument ||
         status.code() == absl::StatusCode::kOutOfRange ||
         status.code() == absl::StatusCode::kResourceExhausted;
}

}  // namespace

JobReporter::JobReporter(JobReporterOptions options, std::string context, std::string worker_id,
                         std::string lease_id, CoordinatorClient* client,
                         const common::Clock& clock,
                         std::optional<common::Clock::MonotonicTime> lease_start)
    : options_(options),
      context_(std::move(context)),
      worker_id_(std::move(worker_id)),
      lease_id_(std::move(lease_id)),
      client_(client),
      clock_(clock),
      logs_(std::make_shared<LogBuffer>(options.log_buffer_lines, options.log_buffer_bytes)),
      parser_(context_),
      renewed_(lease_start.value_or(clock.MonotonicNow())) {}

bool JobReporter::LeaseLost(const absl::Status& status) {
  if (status.code() != absl::StatusCode::kFailedPrecondition) return false;
  lease_lost_ = true;
  spdlog::warn("{}: lease lost: {}", context_, status.ToString());
  return true;
}

void JobReporter::Note(const std::string& text) {
  spdlog::warn("{}: {}", context_, text);
  logs_->Add(kWorkerNote + text, clock_.WallUnixMs());
}

void JobReporter::TakeLines(std::vector<std::string>* lines) {
  for (const std::string& line : *lines) {
    parser_.Consume(line, &pending_);
    if (pending_.size() >= options_.flush_points && !CheckLease()) FlushMetrics();
  }
  lines->clear();
  if (!drop_noted_ && parser_.dropped_points() > 0) {
    Note("dropped a metric point: " + parser_.first_drop_reason() +
         " (later ones are counted, the total comes when the attempt ends)");
    drop_noted_ = true;
  }
}

void JobReporter::FlushMetrics() {
  const size_t per_call = std::max<size_t>(1, options_.flush_points);
  while (!pending_.empty() && !CheckLease()) {
    const size_t n = std::min(pending_.size(), per_call);
    std::vector<MetricPoint> batch(pending_.begin(), pending_.begin() + n);
    // Like a heartbeat, a report may not outlast the lease (Heartbeat()).
    absl::Status s = client_->ReportMetrics(worker_id_, lease_id_, batch, LeaseLeft());
    if (LeaseLost(s)) return;
    if (!s.ok() && !IsPermanent(s)) {
      spdlog::warn("{}: reporting {} metric points failed: {}", context_, pending_.size(),
                   s.ToString());
      return;
    }
    if (!s.ok()) {
      spdlog::error("{}: the coordinator refused {} metric points: {}", context_, n, s.ToString());
      if (refused_points_ == 0) refused_reason_ = std::string(s.message());
      refused_points_ += static_cast<int64_t>(n);
    } else if (on_recorded_) {
      for (const MetricPoint& p : batch) {
        if (p.name == metric::kCheckpointBytes) on_recorded_(p.tokens);
      }
    }
    pending_.erase(pending_.begin(), pending_.begin() + n);
  }
}

void JobReporter::FlushLogs() {
  while (logs_->pending() > 0 && !CheckLease()) {
    std::vector<LogLine> batch = logs_->Take(kLogBatch, kLogBatchBytes);
    absl::Status s = client_->AppendLogs(worker_id_, lease_id_, batch, LeaseLeft());
    if (s.ok()) continue;
    if (LeaseLost(s)) return;
    last_log_error_ = s.ToString();
    if (IsPermanent(s)) {
      spdlog::error("{}: the coordinator refused {} log lines: {}", context_, batch.size(),
                    last_log_error_);
      log_lines_refused_ += static_cast<int64_t>(batch.size());
      continue;
    }
    spdlog::warn("{}: relaying {} log lines failed: {}", context_, batch.size(), last_log_error_);
    ++log_calls_failed_;
    logs_->PutBack(std::move(batch));
    return;
  }
}

common::Clock::MonotonicTime JobReporter::GiveUpAt() const {
  return renewed_ + options_.lease_ttl - std::min(options_.stop_margin, options_.lease_ttl / 2);
}

bool JobReporter::CheckLease() {
  if (lease_lost_ || options_.lease_ttl.count() <= 0) return lease_lost_;
  const common::Clock::MonotonicTime now = clock_.MonotonicNow();
  if (now < GiveUpAt()) return false;
  // Whoever holds the cell next must be the only one writing its checkpoints.
  lease_lost_ = true;
  spdlog::error(
      "{}: lease lost: no heartbeat has renewed it for {} ms, and it expires {} ms after the "
      "last one reached the coordinator; stopping the trainer and reporting nothing more for "
      "this lease",
      context_, std::chrono::duration_cast<std::chrono::milliseconds>(now - renewed_).count(),
      options_.lease_ttl.count());
  return true;
}

std::chrono::milliseconds JobReporter::LeaseLeft() const {
  if (options_.lease_ttl.count() <= 0) return std::chrono::milliseconds(0);
  const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(GiveUpAt() - clock_.MonotonicNow());
  return std::max(left, std::chrono::milliseconds(1));
}

bool JobReporter::Heartbeat() {
  if (CheckLease()) return false;
  // The coordinator's deadline runs from when it received this; sending is no later.
  const common::Clock::MonotonicTime sent = clock_.MonotonicNow();
  // The call may not outlast the lease: past it, the trainer must stop whatever the answer.
  absl::StatusOr<HeartbeatReply> reply =
      client_->Heartbeat(worker_id_, lease_id_,
                         Progress{parser_.tokens_done(), parser_.tokens_per_second()}, LeaseLeft());
  if (LeaseLost(reply.status())) return false;
  if (reply.ok()) {
    renewed_ = sent;
    return reply->cancel;
  }
  spdlog::warn("{}: heartbeat failed: {}", context_, reply.status().ToString());
  CheckLease();
  return false;
}

void JobReporter::RelayTheRest() {
  if (CheckLease()) return;
  // What became of the trainer's metrics output, where whoever reads the log will see it.
  if (parser_.malformed_lines() > 0) {
    Note(absl::StrCat("skipped ", parser_.malformed_lines(),
                      " metrics lines that were not onset-train's JSON"));
  }
  if (parser_.dropped_points() > 0) {
    Note(absl::StrCat("dropped ", parser_.dropped_points(),
                      " metric points: first: ", parser_.first_drop_reason()));
  }
  if (refused_points_ > 0) {
    Note(absl::StrCat("the coordinator refused ", refused_points_,
                      " metric points: first: ", refused_reason_));
  }
  // The stderr reader has finished by now (the process was reaped), so this is all of it.
  FlushLogs();
  if (logs_->pending() > 0) FlushLogs();  // one more try for what a hiccup kept back
  if (logs_->dropped() > 0) {
    // Said as it happened: the buffer was full, because the trainer wrote faster than the
    // lines were relayed or because relaying failed (then how often, and the last error).
    std::string why =
        absl::StrCat(logs_->dropped(),
                     " trainer log lines were dropped, the oldest first: the worker holds at "
                     "most ",
                     logs_->max_lines(), " unsent lines (", logs_->max_bytes() >> 20, " MiB) and ");
    if (log_calls_failed_ > 0) {
      absl::StrAppend(&why, log_calls_failed_,
                      " calls relaying them failed (the last: ", last_log_error_, ")");
    } else {
      absl::StrAppend(&why, "the trainer wrote them faster than the coordinator took them");
    }
    Note(why);
    FlushLogs();
  }
  if (log_lines_refused_ > 0) {
    spdlog::warn("{}: the coordinator refused {} trainer log lines (the last error: {})", context_,
                 log_lines_refused_, last_log_error_);
  }
}

}  // namespace onset::worker
