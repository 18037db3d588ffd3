// gRPC glue for onset.v1.StudyService: proto <-> domain types and statuses; the logic lives in
// study_file (parsing, expansion) and Store.
#pragma once

#include <atomic>
#include <chrono>

#include "common/admission.h"
#include "common/clock.h"
#include "common/grpc_auth.h"
#include "coordinator/rpc/proto_convert.h"
#include "coordinator/rpc/write_watchdog.h"
#include "coordinator/store/store.h"
#include "coordinator/study/grid.h"
#include "onset/v1/onset.grpc.pb.h"

namespace onset::coordinator {

// The most cell ids one CancelCells or RerunCells call may name: a study's largest grid, so
// every cell can be named in one call while the work of one call stays bounded.
inline constexpr int kMaxCellIdsPerRequest = kMaxGridPoints;
// A ListWorkers reply stops adding workers past this many bytes (the rest are counted as
// omitted), well within gRPC's default 4 MiB message.
inline constexpr size_t kMaxWorkersReplyBytes = 3 * 1024 * 1024;
// Workers per ListWorkers page unless the request asks for another number.
inline constexpr int kWorkersPerPage = 200;
// ListWorkers without `all` lists the workers that have not exited (DeregisterWorker) and were
// heard from within this long: a worker polls every few seconds while it runs, so one silent for
// longer died without saying so.
inline constexpr std::chrono::minutes kWorkerLiveWindow{10};

// SubmitStudy calls (submissions and dry runs) at once: each holds every cell of its study (a
// hundred thousand, a few hundred MB); the others wait up to kSubmissionWait for a place, then get
// RESOURCE_EXHAUSTED (try again).
inline constexpr int kConcurrentSubmissions = 2;
inline constexpr std::chrono::seconds kSubmissionWait{60};

// One backup at a time (each holds a read transaction, which lets the WAL grow); another waits
// this long for it, then gets UNAVAILABLE saying a backup is being taken.
inline constexpr std::chrono::seconds kBackupWait{5};

// Thread-safe (stateless besides the store and the submissions' admission). `store` and `auth` must
// outlive the service; every call is refused with UNAUTHENTICATED unless `auth` accepts it.
class StudyServiceImpl final : public onset::v1::StudyService::Service {
 public:
  // `shared_checkpoints`: the coordinator keeps checkpoints under a root every worker sees
  // (--checkpoint-root), which WSD branches need to find their trunk's (trunk_plan.h);
  // `checkpoint_root` is that root where this process knows it ("" otherwise), for the paths
  // DescribeCell names. `clock` tells which workers are live (kWorkerLiveWindow); it must
  // outlive the service.
  StudyServiceImpl(Store* store, const common::BearerTokenChecker* auth,
                   bool shared_checkpoints = false, std::string checkpoint_root = "",
                   const common::Clock& clock = common::SystemClock())
      : store_(store),
        auth_(auth),
        shared_checkpoints_(shared_checkpoints),
        checkpoint_root_(std::move(checkpoint_root)),
        clock_(clock) {}

  grpc::Status SubmitStudy(grpc::ServerContext* context,
                           const onset::v1::SubmitStudyRequest* request,
                           grpc::ServerWriter<onset::v1::SubmitStudyResponse>* writer) override;
  grpc::Status ListStudies(grpc::ServerContext* context,
                           const onset::v1::ListStudiesRequest* request,
                           onset::v1::ListStudiesResponse* response) override;
  grpc::Status ListWorkers(grpc::ServerContext* context,
                           const onset::v1::ListWorkersRequest* request,
                           onset::v1::ListWorkersResponse* response) override;
  grpc::Status GetStudy(grpc::ServerContext* context, const onset::v1::GetStudyRequest* request,
                        onset::v1::GetStudyResponse* response) override;
  grpc::Status GetResults(grpc::ServerContext* context, const onset::v1::GetResultsRequest* request,
                          onset::v1::GetResultsResponse* response) override;
  grpc::Status CancelCells(grpc::ServerContext* context,
                           const onset::v1::CancelCellsRequest* request,
                           onset::v1::CancelCellsResponse* response) override;
  grpc::Status RerunCells(grpc::ServerContext* context, const onset::v1::RerunCellsRequest* request,
                          onset::v1::RerunCellsResponse* response) override;
  grpc::Status WatchStudy(grpc::ServerContext* context, const onset::v1::WatchStudyRequest* request,
                          grpc::ServerWriter<onset::v1::WatchStudyResponse>* writer) override;
  grpc::Status ReadLogs(grpc::ServerContext* context, const onset::v1::ReadLogsRequest* request,
                        onset::v1::ReadLogsResponse* response) override;
  grpc::Status StreamMetrics(grpc::ServerContext* context,
                             const onset::v1::StreamMetricsRequest* request,
                             grpc::ServerWriter<onset::v1::MetricsChunk>* writer) override;
  grpc::Status DescribeCell(grpc::ServerContext* context,
                            const onset::v1::DescribeCellRequest* request,
                            onset::v1::DescribeCellResponse* response) override;
  grpc::Status RecordExport(grpc::ServerContext* context,
                            const onset::v1::RecordExportRequest* request,
                            onset::v1::RecordExportResponse* response) override;
  grpc::Status Backup(grpc::ServerContext* context, const onset::v1::BackupRequest* request,
                      grpc::ServerWriter<onset::v1::BackupChunk>* writer) override;

  // Lets Backup stream the database file at `db_path` (db/snapshot_stream.h); without it Backup
  // is FAILED_PRECONDITION. `others_held` (path, what it is), with the database's own files, are
  // what a client must never replace with the copy (db/backup_destination.h). Call before
  // serving.
  void EnableBackups(std::string db_path,
                     std::vector<std::pair<std::string, std::string>> others_held = {}) {
    db_path_ = std::move(db_path);
    others_held_ = std::move(others_held);
  }

  // How long a streamed reply (a backup's chunk, a submission's answer, a watch's update) may
  // wait for its reader before the call is cancelled (write_watchdog.h). Call before serving.
  void SetStalledReaderLimit(std::chrono::milliseconds limit) { stalled_reader_limit_ = limit; }

  // Ends the open watches and long polls (within FeedOptions::poll_ms), so that the server's
  // shutdown need not wait for clients that never hang up. Thread-safe.
  void StopStreams() { stopping_ = true; }

 private:
  Store* const store_;
  const common::BearerTokenChecker* const auth_;
  const bool shared_checkpoints_;
  const std::string checkpoint_root_;
  const common::Clock& clock_;
  std::atomic<bool> stopping_{false};
  common::Admission submissions_{kConcurrentSubmissions};
  std::string db_path_;  // EnableBackups
  std::vector<std::pair<std::string, std::string>> others_held_;
  common::Admission backups_{1};  // one copy at a time
  WriteWatchdog watchdog_;        // every streamed reply waits for its reader a bounded time
  std::chrono::milliseconds stalled_reader_limit_ = kStalledReaderLimit;
};

}  // namespace onset::coordinator
