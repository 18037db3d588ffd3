#include "coordinator/rpc/worker_service.h"

#include <spdlog/spdlog.h>

#include <cmath>
#include <limits>
#include <optional>

#include "common/grpc_status.h"
#include "common/metric_limits.h"
#include "coordinator/cells/checkpoint_layout.h"
#include "coordinator/cells/worker_slots.h"
#include "coordinator/rpc/method_roles.h"

namespace onset::coordinator {
namespace {

// Counts what a request carried that is refused item by item, and logs it once per request.
struct Refusals {
  int count = 0;
  std::string first;
  void Add(const absl::Status& why) {
    if (count++ == 0) first = std::string(why.message());
  }
  void Log(const std::string& lease_id, const char* what, int total) const {
    if (count == 0) return;
    spdlog::warn("lease {}: refused {} of {} {}: first: {}", lease_id, count, total, what, first);
  }
};

}  // namespace

void JobToProto(const ClaimedJob& job, const std::string& checkpoint_root, onset::v1::Job* out) {
  out->set_lease_id(job.lease_id);
  out->set_study(job.study);
  out->set_cell_id(job.cell_id);
  out->set_attempt(job.attempt);
  out->set_config_json(job.config_json);
  out->set_tokens_budget(job.tokens_budget);
  out->set_fresh(job.fresh);
  for (const std::string& device : job.devices) out->add_devices(device);
  absl::StatusOr<std::string> dir =
      AttemptCheckpointDir(checkpoint_root, job.study, job.cell_id, job.attempt);
  if (!dir.ok()) {
    spdlog::warn("cell {}: checkpoints stay on the worker: {}", job.cell_id,
                 std::string(dir.status().message()));
  }
  const std::string root = dir.ok() ? checkpoint_root : "";
  if (dir.ok()) out->set_checkpoint_dir(*dir);
  for (const ResumePoint& point : job.resume_from) {
    onset::v1::ResumeCheckpoint* from = out->add_resume_from();
    from->set_attempt(point.attempt);
    from->set_tokens(point.tokens);
    from->set_own_dir(point.own_dir);
    // Its path when every worker sees the root; else the worker looks in its own work directory.
    absl::StatusOr<std::string> path =
        CheckpointPath(root, job.study, job.cell_id, point.attempt, point.own_dir, point.tokens);
    if (path.ok()) from->set_path(*path);
  }
  if (job.role != CellRole::kBranch) return;
  absl::StatusOr<std::string> trunk_file =
      job.trunk_attempt > 0 ? CheckpointPath(root, job.study, job.trunk_id, job.trunk_attempt,
                                             job.trunk_own_dir, job.branch_tokens)
                            : absl::StatusOr<std::string>(std::string());
  if (trunk_file.ok() && !trunk_file->empty()) {
    out->set_trunk_checkpoint(*trunk_file);
  } else {
    spdlog::warn(
        "cell {}: a branch of trunk {}, but no worker can reach that trunk's checkpoints ({}): "
        "it trains its whole run itself",
        job.cell_id, job.trunk_id,
        !trunk_file.ok() ? std::string(trunk_file.status().message())
        : root.empty()   ? std::string("onsetd has no --checkpoint-root")
                         : std::string("the trunk recorded no checkpoint there"));
  }
}

grpc::Status WorkerServiceImpl::Authenticate(grpc::ServerContext& context,
                                             const common::MethodAccess& method,
                                             const std::string& worker_id,
                                             const std::string& secret) const {
  if (grpc::Status s = auth_->Check(context, method); !s.ok()) return s;
  if (worker_id.empty() || worker_id.size() > kMaxWorkerIdBytes) {
    return grpc::Status(
        grpc::StatusCode::INVALID_ARGUMENT,
        "worker_id: required, at most " + std::to_string(kMaxWorkerIdBytes) + " bytes");
  }
  if (secret.size() > kMaxWorkerIdBytes) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "worker_secret: at most " + std::to_string(kMaxWorkerIdBytes) + " bytes");
  }
  return common::ToGrpcStatus(store_->AuthenticateWorker(worker_id, secret));
}

grpc::Status WorkerServiceImpl::RegisterWorker(grpc::ServerContext* context,
                                               const onset::v1::RegisterWorkerRequest* request,
                                               onset::v1::RegisterWorkerResponse* response) {
  if (grpc::Status s = auth_->Check(*context, method_roles::kRegisterWorker); !s.ok()) return s;
  absl::StatusOr<int> slots = WorkerSlots(request->slots(), request->devices_size());
  if (!slots.ok()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, std::string(slots.status().message()));
  }
  // Shown in every listing of workers: short, printable-length labels.
  constexpr size_t kMaxLabelBytes = 256;
  for (const auto& [field, value] :
       {std::pair{"host", &request->host()}, std::pair{"version", &request->version()}}) {
    if (value->size() > kMaxLabelBytes) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          std::string(field) + ": " + std::to_string(value->size()) +
                              " bytes; at most " + std::to_string(kMaxLabelBytes));
    }
  }
  WorkerRegistration worker{request->host(),
                            *slots,
                            request->version(),
                            {request->devices().begin(), request->devices().end()},
                            request->slurm_job()};
  absl::StatusOr<RegisteredWorker> registered = store_->RegisterWorker(worker);
  if (!registered.ok()) return common::ToGrpcStatus(registered.status());
  response->set_worker_id(registered->id);
  response->set_worker_secret(registered->secret);
  response->set_lease_ttl_ms(leases_->ttl().count());
  response->set_heartbeat_interval_ms(heartbeat_interval_.count());
  return grpc::Status::OK;
}

grpc::Status WorkerServiceImpl::LeaseJob(grpc::ServerContext* context,
                                         const onset::v1::LeaseJobRequest* request,
                                         onset::v1::LeaseJobResponse* response) {
  if (grpc::Status s = Authenticate(*context, method_roles::kLeaseJob, request->worker_id(),
                                    request->worker_secret());
      !s.ok()) {
    return s;
  }
  absl::StatusOr<std::optional<ClaimedJob>> job = leases_->LeaseJob(
      request->worker_id(), {request->free_devices().begin(), request->free_devices().end()});
  if (!job.ok()) return common::ToGrpcStatus(job.status());
  if (!*job) {
    // What it may run later keeps an idle worker waiting (onset-worker --exit-when-idle).
    absl::StatusOr<int> waiting = waiting_->CountWaitingCells(request->worker_id());
    if (!waiting.ok()) return common::ToGrpcStatus(waiting.status());
    response->set_queued_waiting(*waiting);
    return grpc::Status::OK;
  }
  JobToProto(**job, checkpoint_root_, response->mutable_job());
  return grpc::Status::OK;
}

grpc::Status WorkerServiceImpl::Heartbeat(grpc::ServerContext* context,
                                          const onset::v1::HeartbeatRequest* request,
                                          onset::v1::HeartbeatResponse* response) {
  if (grpc::Status s = Authenticate(*context, method_roles::kHeartbeat, request->worker_id(),
                                    request->worker_secret());
      !s.ok()) {
    return s;
  }
  // Absurd progress is not recorded, but the lease is renewed all the same: refusing the
  // heartbeat would let the lease expire and cost the attempt.
  std::optional<int64_t> tokens_done = request->tokens_done();
  if (absl::Status bad = common::CheckTokens(request->tokens_done()); !bad.ok()) {
    spdlog::warn("lease {}: heartbeat progress not recorded: {}", request->lease_id(),
                 std::string(bad.message()));
    tokens_done.reset();
  }
  double tokens_per_second = request->tokens_per_second();
  if (!std::isfinite(tokens_per_second) || tokens_per_second < 0) tokens_per_second = 0;
  absl::StatusOr<LeaseStatus> s =
      leases_->Heartbeat(request->worker_id(), request->lease_id(), tokens_done, tokens_per_second);
  if (!s.ok()) return common::ToGrpcStatus(s.status());
  response->set_lease_ttl_ms(leases_->ttl().count());
  response->set_cancel(s->cancelled);
  return grpc::Status::OK;
}

grpc::Status WorkerServiceImpl::ReportMetrics(grpc::ServerContext* context,
                                              const onset::v1::ReportMetricsRequest* request,
                                              onset::v1::ReportMetricsResponse* response) {
  if (grpc::Status s = Authenticate(*context, method_roles::kReportMetrics, request->worker_id(),
                                    request->worker_secret());
      !s.ok()) {
    return s;
  }
  // Each point is checked alone (common/metric_limits.h): a bad one is refused, counted in
  // `accepted` falling short and logged, and the others are stored.
  std::vector<MetricPoint> points;
  points.reserve(request->points_size());
  Refusals refused;
  for (const onset::v1::MetricPoint& p : request->points()) {
    absl::Status bad = common::CheckMetricName(p.name());
    if (bad.ok()) bad = common::CheckTokens(p.tokens());
    if (!bad.ok()) {
      refused.Add(bad);
      continue;
    }
    // Stored as NULL, "not finite", like NaN.
    const double value =
        std::isinf(p.value()) ? std::numeric_limits<double>::quiet_NaN() : p.value();
    points.push_back(
        MetricPoint{p.name(), p.tokens(), value, common::WallTimeOrUnknown(p.at_unix_ms())});
  }
  refused.Log(request->lease_id(), "metric points", request->points_size());
  // Called even with no point left: the caller learns whether its lease still holds.
  absl::StatusOr<int> accepted =
      leases_->ReportMetrics(request->worker_id(), request->lease_id(), points);
  if (!accepted.ok()) return common::ToGrpcStatus(accepted.status());
  response->set_accepted(*accepted);
  return grpc::Status::OK;
}

grpc::Status WorkerServiceImpl::FinishJob(grpc::ServerContext* context,
                                          const onset::v1::FinishJobRequest* request,
                                          onset::v1::FinishJobResponse*) {
  if (grpc::Status s = Authenticate(*context, method_roles::kFinishJob, request->worker_id(),
                                    request->worker_secret());
      !s.ok()) {
    return s;
  }
  AttemptEnd end;
  switch (request->outcome()) {
    case onset::v1::JOB_OUTCOME_SUCCEEDED:
      end.outcome = AttemptOutcome::kSucceeded;
      break;
    case onset::v1::JOB_OUTCOME_FAILED:
      end.outcome = AttemptOutcome::kFailed;
      break;
    case onset::v1::JOB_OUTCOME_DIVERGED:
      end.outcome = AttemptOutcome::kDiverged;
      break;
    case onset::v1::JOB_OUTCOME_HANDED_BACK:
      end.outcome = AttemptOutcome::kHandedBack;
      break;
    case onset::v1::JOB_OUTCOME_CANCELLED:
      end.outcome = AttemptOutcome::kCancelled;
      break;
    default:
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          "outcome: must be one of JOB_OUTCOME_SUCCEEDED, _FAILED, _DIVERGED, "
                          "_HANDED_BACK, _CANCELLED");
  }
  // proto3 cannot tell "exit code 0" from "no exit code": a signal death has no exit code.
  if (request->signal() == 0) end.exit_code = request->exit_code();
  end.signal = request->signal();
  end.reason = request->reason();
  end.stderr_tail = request->stderr_tail();
  return common::ToGrpcStatus(leases_->FinishJob(request->worker_id(), request->lease_id(), end));
}

grpc::Status WorkerServiceImpl::AppendLogs(grpc::ServerContext* context,
                                           const onset::v1::AppendLogsRequest* request,
                                           onset::v1::AppendLogsResponse* response) {
  if (grpc::Status s = Authenticate(*context, method_roles::kAppendLogs, request->worker_id(),
                                    request->worker_secret());
      !s.ok()) {
    return s;
  }
  constexpr int kMaxLinesPerCall = 10'000;
  if (request->lines_size() > kMaxLinesPerCall) {
    return grpc::Status(
        grpc::StatusCode::INVALID_ARGUMENT,
        "lines: at most 10000 per call, got " + std::to_string(request->lines_size()));
  }
  std::vector<LogLine> lines;
  lines.reserve(request->lines_size());
  Refusals refused;
  for (const onset::v1::LogLine& l : request->lines()) {
    if (l.line() < 1) {
      refused.Add(absl::InvalidArgumentError("log line number " + std::to_string(l.line()) +
                                             ": lines are numbered from 1"));
      continue;
    }
    lines.push_back(LogLine{l.line(), l.at_unix_ms(), l.text()});
  }
  refused.Log(request->lease_id(), "log lines", request->lines_size());
  absl::StatusOr<int> accepted =
      leases_->AppendLogs(request->worker_id(), request->lease_id(), lines);
  if (!accepted.ok()) return common::ToGrpcStatus(accepted.status());
  response->set_accepted(*accepted);
  return grpc::Status::OK;
}

grpc::Status WorkerServiceImpl::DeregisterWorker(grpc::ServerContext* context,
                                                 const onset::v1::DeregisterWorkerRequest* request,
                                                 onset::v1::DeregisterWorkerResponse*) {
  if (grpc::Status s = Authenticate(*context, method_roles::kDeregisterWorker, request->worker_id(),
                                    request->worker_secret());
      !s.ok()) {
    // Saying it exits twice is no error.
    if (s.error_code() == grpc::StatusCode::FAILED_PRECONDITION &&
        s.error_message().find("said it exits") != std::string::npos) {
      return grpc::Status::OK;
    }
    return s;
  }
  return common::ToGrpcStatus(store_->DeregisterWorker(request->worker_id()));
}

}  // namespace onset::coordinator
