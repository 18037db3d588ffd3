// gRPC glue for CoordinatorClient: proto <-> worker types and grpc::Status -> absl::Status.
// Text that comes from the trainer (log lines, metric names, the stderr tail and the reasons
// quoting it) is made valid UTF-8 here at the latest: protobuf refuses a whole message whose
// string field holds one invalid byte.
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <map>

#include "common/grpc_auth.h"
#include "common/grpc_status.h"
#include "common/mutex.h"
#include "common/utf8.h"
#include "onset/v1/onset.grpc.pb.h"
#include "worker/coordinator_client.h"

namespace onset::worker {
namespace {

namespace v1 = ::onset::v1;

v1::JobOutcome ToProto(JobOutcome outcome) {
  switch (outcome) {
    case JobOutcome::kSucceeded:
      return v1::JOB_OUTCOME_SUCCEEDED;
    case JobOutcome::kFailed:
      return v1::JOB_OUTCOME_FAILED;
    case JobOutcome::kDiverged:
      return v1::JOB_OUTCOME_DIVERGED;
    case JobOutcome::kHandedBack:
      return v1::JOB_OUTCOME_HANDED_BACK;
    case JobOutcome::kCancelled:
      return v1::JOB_OUTCOME_CANCELLED;
  }
  return v1::JOB_OUTCOME_FAILED;
}

class GrpcCoordinatorClient : public CoordinatorClient {
 public:
  GrpcCoordinatorClient(std::string address, const common::ClientSecurity& security,
                        std::chrono::milliseconds rpc_timeout)
      : address_(std::move(address)),
        rpc_timeout_(rpc_timeout),
        stub_(v1::WorkerService::NewStub(common::NewClientChannel(address_, security))) {}

  absl::StatusOr<Registration> Register(const std::string& host,
                                        const std::vector<std::string>& devices,
                                        const std::string& version,
                                        const std::string& slurm_job) override {
    v1::RegisterWorkerRequest request;
    request.set_host(host);
    request.set_slurm_job(slurm_job);
    request.set_slots(static_cast<int>(devices.size()));
    request.set_version(version);
    for (const std::string& device : devices) request.add_devices(device);
    v1::RegisterWorkerResponse response;
    grpc::ClientContext context;
    SetDeadline(&context);
    if (auto s = Convert("RegisterWorker", stub_->RegisterWorker(&context, request, &response));
        !s.ok()) {
      return s;
    }
    Registration r;
    r.worker_id = response.worker_id();
    r.secret = response.worker_secret();
    {
      common::MutexLock lock(&mu_);
      secrets_[r.worker_id] = r.secret;
    }
    if (response.lease_ttl_ms() > 0)
      r.lease_ttl = std::chrono::milliseconds(response.lease_ttl_ms());
    if (response.heartbeat_interval_ms() > 0) {
      r.heartbeat_interval = std::chrono::milliseconds(response.heartbeat_interval_ms());
    }
    return r;
  }

  absl::StatusOr<LeaseReply> Lease(const std::string& worker_id,
                                   const std::vector<std::string>& free_devices,
                                   std::chrono::milliseconds timeout) override {
    v1::LeaseJobRequest request;
    request.set_worker_id(worker_id);
    request.set_worker_secret(SecretOf(worker_id));
    for (const std::string& device : free_devices) request.add_free_devices(device);
    v1::LeaseJobResponse response;
    grpc::ClientContext context;
    SetDeadline(&context, timeout);
    if (auto s = Convert("LeaseJob", stub_->LeaseJob(&context, request, &response)); !s.ok()) {
      return s;
    }
    LeaseReply reply;
    if (!response.has_job()) {
      reply.queued_waiting = std::max(0, response.queued_waiting());
      return reply;
    }
    const v1::Job& job = response.job();
    JobSpec spec;
    spec.lease_id = job.lease_id();
    spec.study = job.study();
    spec.cell_id = job.cell_id();
    spec.attempt = job.attempt();
    spec.config_json = job.config_json();
    spec.tokens_budget = job.tokens_budget();
    spec.fresh = job.fresh();
    spec.checkpoint_dir = job.checkpoint_dir();
    for (const v1::ResumeCheckpoint& from : job.resume_from()) {
      spec.resume_from.push_back(
          ResumeFrom{from.attempt(), from.tokens(), from.path(), from.own_dir()});
    }
    spec.devices.assign(job.devices().begin(), job.devices().end());
    spec.trunk_checkpoint = job.trunk_checkpoint();
    reply.job = std::move(spec);
    return reply;
  }

  absl::StatusOr<HeartbeatReply> Heartbeat(const std::string& worker_id,
                                           const std::string& lease_id, const Progress& progress,
                                           std::chrono::milliseconds timeout) override {
    v1::HeartbeatRequest request;
    request.set_worker_id(worker_id);
    request.set_worker_secret(SecretOf(worker_id));
    request.set_lease_id(lease_id);
    request.set_tokens_done(progress.tokens_done);
    request.set_tokens_per_second(progress.tokens_per_second);
    v1::HeartbeatResponse response;
    grpc::ClientContext context;
    SetDeadline(&context, timeout);
    if (absl::Status s = Convert("Heartbeat", stub_->Heartbeat(&context, request, &response));
        !s.ok()) {
      return s;
    }
    return HeartbeatReply{response.cancel()};
  }

  absl::Status ReportMetrics(const std::string& worker_id, const std::string& lease_id,
                             const std::vector<MetricPoint>& points,
                             std::chrono::milliseconds timeout) override {
    v1::ReportMetricsRequest request;
    request.set_worker_id(worker_id);
    request.set_worker_secret(SecretOf(worker_id));
    request.set_lease_id(lease_id);
    for (const MetricPoint& p : points) {
      v1::MetricPoint* out = request.add_points();
      out->set_name(common::SanitizeUtf8(p.name));
      out->set_tokens(p.tokens);
      out->set_value(p.value);
      out->set_at_unix_ms(p.at_unix_ms);
    }
    v1::ReportMetricsResponse response;
    grpc::ClientContext context;
    SetDeadline(&context, timeout);
    return Convert("ReportMetrics", stub_->ReportMetrics(&context, request, &response));
  }

  absl::Status Finish(const std::string& worker_id, const std::string& lease_id,
                      const JobResult& result) override {
    v1::FinishJobRequest request;
    request.set_worker_id(worker_id);
    request.set_worker_secret(SecretOf(worker_id));
    request.set_lease_id(lease_id);
    request.set_outcome(ToProto(result.outcome));
    request.set_exit_code(result.exit_code);
    request.set_signal(result.signal);
    request.set_reason(common::SanitizeUtf8(result.reason));
    request.set_stderr_tail(common::SanitizeUtf8(result.stderr_tail));
    v1::FinishJobResponse response;
    grpc::ClientContext context;
    SetDeadline(&context);
    return Convert("FinishJob", stub_->FinishJob(&context, request, &response));
  }

  absl::Status AppendLogs(const std::string& worker_id, const std::string& lease_id,
                          const std::vector<LogLine>& lines,
                          std::chrono::milliseconds timeout) override {
    v1::AppendLogsRequest request;
    request.set_worker_id(worker_id);
    request.set_worker_secret(SecretOf(worker_id));
    request.set_lease_id(lease_id);
    for (const LogLine& l : lines) {
      v1::LogLine* out = request.add_lines();
      out->set_line(l.line);
      out->set_at_unix_ms(l.at_unix_ms);
      out->set_text(common::SanitizeUtf8(l.text));
    }
    v1::AppendLogsResponse response;
    grpc::ClientContext context;
    SetDeadline(&context, timeout);
    return Convert("AppendLogs", stub_->AppendLogs(&context, request, &response));
  }

  absl::Status Deregister(const std::string& worker_id,
                          std::chrono::milliseconds timeout) override {
    v1::DeregisterWorkerRequest request;
    request.set_worker_id(worker_id);
    request.set_worker_secret(SecretOf(worker_id));
    v1::DeregisterWorkerResponse response;
    grpc::ClientContext context;
    SetDeadline(&context, timeout);
    return Convert("DeregisterWorker", stub_->DeregisterWorker(&context, request, &response));
  }

 private:
  // The secret Register() got for `worker_id`; empty for a worker this client did not register
  // (the coordinator then refuses the call).
  std::string SecretOf(const std::string& worker_id) const {
    common::MutexLock lock(&mu_);
    auto it = secrets_.find(worker_id);
    return it == secrets_.end() ? std::string() : it->second;
  }

  void SetDeadline(grpc::ClientContext* context,
                   std::chrono::milliseconds bound = std::chrono::milliseconds(0)) const {
    const std::chrono::milliseconds timeout =
        bound.count() > 0 ? std::min(bound, rpc_timeout_) : rpc_timeout_;
    context->set_deadline(std::chrono::system_clock::now() + timeout);
  }

  absl::Status Convert(const char* rpc, const grpc::Status& status) const {
    return common::FromGrpcStatus(status, rpc, address_);
  }

  const std::string address_;
  const std::chrono::milliseconds rpc_timeout_;
  std::unique_ptr<v1::WorkerService::Stub> stub_;
  mutable common::Mutex mu_;
  std::map<std::string, std::string> secrets_ ABSL_GUARDED_BY(mu_);  // worker id -> secret
};

}  // namespace

std::unique_ptr<CoordinatorClient> NewGrpcCoordinatorClient(const std::string& address,
                                                            const common::ClientSecurity& security,
                                                            std::chrono::milliseconds rpc_timeout) {
  return std::make_unique<GrpcCoordinatorClient>(address, security, rpc_timeout);
}

}  // namespace onset::worker
