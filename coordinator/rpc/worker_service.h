// gRPC glue for onset.v1.WorkerService: proto <-> domain types and statuses; the logic lives in
// LeaseManager and Store.
#pragma once

#include <chrono>
#include <string>

#include "common/grpc_auth.h"
#include "coordinator/scheduling/lease_manager.h"
#include "coordinator/store/lease_store.h"
#include "coordinator/store/worker_store.h"
#include "onset/v1/onset.grpc.pb.h"

namespace onset::coordinator {

// The Job a worker is handed for `job`. The attempt's checkpoint directory, and the checkpoints
// it may resume, lie under `checkpoint_root` (checkpoint_layout.h; no paths when the root is
// empty: the worker looks in its own work directory). A branch starts from its trunk's
// checkpoint file at its branch_tokens, in the directory of the trunk attempt that recorded it;
// without a root no worker could be sure to see that file, so none is named (logged: the branch
// then trains its whole run itself, the same cell, only slower).
void JobToProto(const ClaimedJob& job, const std::string& checkpoint_root, onset::v1::Job* out);

// Thread-safe. `workers`, `waiting`, `leases` and `auth` must outlive the service; every call is
// refused with UNAUTHENTICATED unless `auth` accepts its token, and with PERMISSION_DENIED unless
// the token's role is worker or admin (method_roles.h). Every call but RegisterWorker must carry
// the worker's id and its secret (WorkerStore::AuthenticateWorker). Calls about a job are accepted
// only from the worker holding its lease (LeaseManager checks the pair of worker id and lease id)
// while its attempt is its cell's current one (the store fences the rest).
class WorkerServiceImpl final : public onset::v1::WorkerService::Service {
 public:
  // `checkpoint_root`: a directory every worker sees (a shared file system) under which each
  // cell keeps its checkpoints (ROOT/STUDY/CELL), so a requeued cell resumes on any worker.
  // Empty: each worker keeps them in its own work directory.
  // `waiting` counts the cells an idle worker could run later (LeaseStore::CountWaitingCells).
  WorkerServiceImpl(WorkerStore* workers, LeaseStore* waiting, LeaseManager* leases,
                    std::chrono::milliseconds heartbeat_interval,
                    const common::BearerTokenChecker* auth, std::string checkpoint_root = "")
      : store_(workers),
        waiting_(waiting),
        leases_(leases),
        heartbeat_interval_(heartbeat_interval),
        auth_(auth),
        checkpoint_root_(std::move(checkpoint_root)) {}

  grpc::Status RegisterWorker(grpc::ServerContext* context,
                              const onset::v1::RegisterWorkerRequest* request,
                              onset::v1::RegisterWorkerResponse* response) override;
  grpc::Status LeaseJob(grpc::ServerContext* context, const onset::v1::LeaseJobRequest* request,
                        onset::v1::LeaseJobResponse* response) override;
  grpc::Status Heartbeat(grpc::ServerContext* context, const onset::v1::HeartbeatRequest* request,
                         onset::v1::HeartbeatResponse* response) override;
  grpc::Status ReportMetrics(grpc::ServerContext* context,
                             const onset::v1::ReportMetricsRequest* request,
                             onset::v1::ReportMetricsResponse* response) override;
  grpc::Status FinishJob(grpc::ServerContext* context, const onset::v1::FinishJobRequest* request,
                         onset::v1::FinishJobResponse* response) override;
  grpc::Status AppendLogs(grpc::ServerContext* context, const onset::v1::AppendLogsRequest* request,
                          onset::v1::AppendLogsResponse* response) override;
  grpc::Status DeregisterWorker(grpc::ServerContext* context,
                                const onset::v1::DeregisterWorkerRequest* request,
                                onset::v1::DeregisterWorkerResponse* response) override;

 private:
  // The bearer token and its role for `method`, then the worker's id and secret.
  grpc::Status Authenticate(grpc::ServerContext& context, const common::MethodAccess& method,
                            const std::string& worker_id, const std::string& secret) const;

  static constexpr size_t kMaxWorkerIdBytes = 256;

  WorkerStore* const store_;
  LeaseStore* const waiting_;
  LeaseManager* const leases_;
  const std::chrono::milliseconds heartbeat_interval_;
  const common::BearerTokenChecker* const auth_;
  const std::string checkpoint_root_;
};

}  // namespace onset::coordinator
