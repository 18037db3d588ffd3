// What a running job tells the coordinator while its lease lasts: the trainer's metric points in
// batches, its stderr lines, heartbeats with progress. Notices when the lease is lost (the
// coordinator answers FailedPrecondition); after that it sends nothing more.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "worker/coordinator_client.h"
#include "worker/log_buffer.h"
#include "worker/metrics_parser.h"

namespace onset::worker {

struct JobReporterOptions {
  size_t flush_points = 500;  // metric points per ReportMetrics call; a batch goes at this many
  size_t log_buffer_lines = LogBuffer::kDefaultMaxLines;  // stderr lines held until relayed
  size_t log_buffer_bytes = LogBuffer::kDefaultMaxBytes;
  // The coordinator's lease TTL (from registration). The coordinator's deadline is the TTL after
  // it received the last heartbeat, so at least the TTL after that heartbeat was sent; once
  // `lease_ttl - stop_margin` has passed since then without a renewal, the reporter counts the
  // lease as lost, so that the trainer has stopped before the cell can be leased elsewhere. Zero:
  // only the coordinator's answer says so.
  std::chrono::milliseconds lease_ttl{0};
  std::chrono::milliseconds stop_margin{0};  // at most half the TTL is used
};

// Used by the job's thread, except logs(), which the stderr reader fills. `client` and `clock`
// are not owned and must outlive the reporter.
class JobReporter {
 public:
  // `context` ("cell <id> attempt <n>") starts every log line about the job. `lease_start` is
  // when the worker asked for the lease (its clock; default: now): the coordinator's deadline
  // runs from the claim, which came later, so counting from the request is on the safe side.
  JobReporter(JobReporterOptions options, std::string context, std::string worker_id,
              std::string lease_id, CoordinatorClient* client, const common::Clock& clock,
              std::optional<common::Clock::MonotonicTime> lease_start = std::nullopt);

  // Parses the trainer's stdout lines (and clears them), sending a batch whenever flush_points
  // are pending.
  void TakeLines(std::vector<std::string>* lines);

  // Sends the pending points, at most flush_points per call (so that a backlog never makes a
  // request too large), each call bounded by what is left of the lease and none once it counts
  // as lost (CheckLease). A transient failure keeps the rest for the next try (the coordinator
  // de-duplicates re-sent points); a permanent refusal drops that call's points, counted, so
  // that one bad batch is never re-sent forever.
  void FlushMetrics();

  // Sends the trainer's stderr lines that are waiting, in calls bounded in lines, bytes and, like
  // the metric reports, time (what is left of the lease).
  // Best effort: a failure keeps them for the next try (the buffer is bounded), a permanent
  // refusal drops that call's lines, and they never hold up the job or its outcome.
  void FlushLogs();

  // Renews the lease with the progress so far; true when the coordinator says the cell was
  // cancelled.
  bool Heartbeat();

  // Whether the lease is lost, counting one that no heartbeat renewed in time (lease_ttl): the
  // job must then stop its trainer and report nothing more. Call it as often as the job wakes.
  bool CheckLease();

  // `recorded` is called (on the job's thread) with the tokens of each checkpoint the
  // coordinator took (a delivered checkpoint/bytes point), in order.
  void OnCheckpointRecorded(std::function<void(int64_t tokens)> recorded) {
    on_recorded_ = std::move(recorded);
  }

  // Adds a line of the worker's own to the cell's log, for whoever reads it with onset logs,
  // and says it in the worker's log too.
  void Note(const std::string& text);

  // Once the trainer has exited and its last points are delivered: says in the cell's log what
  // became of its output (skipped lines, dropped and refused points, log lines dropped for want
  // of room) and relays the lines still waiting. Nothing once the lease is lost.
  void RelayTheRest();

  bool lease_lost() const { return lease_lost_; }
  size_t pending_points() const { return pending_.size(); }
  // The trainer's stderr lines, shared with the thread that reads them.
  const std::shared_ptr<LogBuffer>& logs() const { return logs_; }

 private:
  // Marks the lease lost when `status` says so; true then.
  bool LeaseLost(const absl::Status& status);
  // When the lease counts as lost without a renewal: the TTL after the last renewing heartbeat
  // was sent, less the stop margin (at most half the TTL). Only with a TTL.
  common::Clock::MonotonicTime GiveUpAt() const;
  // How long until then, at least 1 ms; 0 without a TTL.
  std::chrono::milliseconds LeaseLeft() const;

  const JobReporterOptions options_;
  const std::string context_;
  const std::string worker_id_;
  const std::string lease_id_;
  CoordinatorClient* const client_;
  const common::Clock& clock_;
  const std::shared_ptr<LogBuffer> logs_;

  std::function<void(int64_t)> on_recorded_;
  MetricsParser parser_;
  std::vector<MetricPoint> pending_;  // parsed, not yet delivered
  bool lease_lost_ = false;
  common::Clock::MonotonicTime renewed_;  // the lease's start or last renewal
  bool drop_noted_ = false;        // the first dropped metric point was noted in the cell's log
  int64_t refused_points_ = 0;     // points the coordinator refused for good
  std::string refused_reason_;     // and why, the first time
  int64_t log_calls_failed_ = 0;   // AppendLogs calls that failed (lines kept for a retry)
  int64_t log_lines_refused_ = 0;  // lines of calls the coordinator refused for good
  std::string last_log_error_;
};

}  // namespace onset::worker
