// Store on one SQLite file (schema in db/migrations/).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "common/clock.h"
#include "common/mutex.h"
#include "coordinator/cells/cell_lifecycle.h"
#include "coordinator/store/store.h"
#include "db/read_pool.h"
#include "db/sqlite.h"
#include "db/write_queue.h"

namespace onset::coordinator {

// Split by area: sqlite_store.cc (opening, studies, listings, results), sqlite_leases.cc (workers,
// claims, the calls of a lease), sqlite_cell_requests.cc (cancel, rerun), sqlite_store_feeds.cc
// (events, logs, metric streams), sqlite_instance.cc (generations, restores, backups' records),
// sqlite_access.cc (tokens, the audit log); every change of a cell goes through
// sqlite_lifecycle.h.
//
// One writer and a pool of readers (db/write_queue.h, db/read_pool.h): every write runs on the
// writer's thread, batched with the writes that queued up meanwhile into one transaction; reads
// run on their own connections and see the last commit without blocking the writer. (An
// in-memory database has no readers: its reads queue behind the writes.) Several SqliteStores
// (or processes) may share one file; SQLite's locking and busy_timeout serialise their writers.
// (A coordinator serves a file alone: CoordinatorServer takes db/database_lock.h first.)
// Timestamps come from `clock` (wall time).
//
// A write that fails in SQLite returns "database write failed: REASON (FILE)" and is logged
// (db/write_queue.h): Unavailable when it may pass (the lock is held elsewhere, the disk is
// full), Internal otherwise (a read-only file, an I/O error): not FailedPrecondition, which tells
// a worker that its lease has ended.
//
// Opened read-only (OpenReadOnly) it has readers only: it never writes the file, and every write
// fails with FailedPrecondition, so a process that only looks (`onset status` when no coordinator
// serves the file) cannot disturb the coordinator that may start on the same file meanwhile.
class SqliteStore final : public Store {
 public:
  struct Options {
    int readers = 4;            // reader connections (file databases)
    int max_write_batch = 512;  // operations per write transaction at most
    // Read-only: how often WaitForChange looks for commits of other processes.
    int change_poll_ms = 100;
    // Worker rows kept at most. A registration that finds this many forgets the workers seen
    // least recently that ran no attempt and have not been seen for forget_workers_after (a
    // worker forgotten that comes back is told so and registers again); when none may be
    // forgotten it is refused (ResourceExhausted). Workers that ran attempts stay: their
    // attempts name them.
    int64_t max_workers = 100'000;
    std::chrono::milliseconds forget_workers_after{std::chrono::hours(1)};
    // The bounds of access_store.h (tokens that work, token rows, audit entries kept), smaller
    // in tests.
    int64_t max_live_tokens = kMaxLiveTokens;
    int64_t max_token_rows = kMaxTokenRows;
    int64_t max_audit_entries = kMaxAuditEntries;
  };

  // Opens `path` (creating it and its parent directories; ":memory:" for a private in-memory
  // database) and migrates it to the latest schema. `clock` must outlive the store.
  // Errors: FailedPrecondition for a database written by a newer onset; Unavailable/Internal
  // otherwise, naming the file.
  static absl::StatusOr<std::unique_ptr<SqliteStore>> Open(const std::string& path,
                                                           const common::Clock& clock,
                                                           RetryPolicy policy,
                                                           const Options& options);
  static absl::StatusOr<std::unique_ptr<SqliteStore>> Open(const std::string& path,
                                                           const common::Clock& clock,
                                                           RetryPolicy policy = RetryPolicy()) {
    return Open(path, clock, policy, Options());
  }

  // Opens the existing database file at `path` read-only (db::OpenDatabaseReadOnly): nothing is
  // created, migrated or written, and its schema must be the one this binary knows. Reads see
  // what other processes commit to the file; ChangeVersion changes with their commits, which
  // WaitForChange notices within Options::change_poll_ms. Every write (AddStudy, PreviewStudy,
  // the lease and log calls, CancelCells, RerunCells, RegisterWorker) returns FailedPrecondition.
  // Errors: those of db::OpenDatabaseReadOnly (NotFound: no such file; FailedPrecondition: another
  // schema version). `clock` must outlive the store.
  static absl::StatusOr<std::unique_ptr<SqliteStore>> OpenReadOnly(const std::string& path,
                                                                   const common::Clock& clock,
                                                                   const Options& options);
  static absl::StatusOr<std::unique_ptr<SqliteStore>> OpenReadOnly(const std::string& path,
                                                                   const common::Clock& clock) {
    return OpenReadOnly(path, clock, Options());
  }

  // A submission writes its rows in transactions of at most this many, so that lease traffic
  // never waits behind a large one for long.
  static constexpr size_t kSubmissionRowsPerWrite = 1000;
  // Cancel and rerun change cells in transactions of at most this many (each cell is a few
  // statements and an event), for the same reason.
  static constexpr size_t kCellsPerWrite = 500;

  // Rewrites the one row of the liveness table through the writer, as every write goes: OK when
  // the database can be written now, the write's error otherwise (a full disk, a lock another
  // program holds past the busy timeout, a read-only file). The health service's probe.
  absl::Status ProbeWrite();
  // The writer's queue and commit times (db/write_queue.h); zeros when read-only.
  db::WriteQueue::Stats WriterStats() const;

  absl::StatusOr<AddStudyResult> AddStudy(const NewStudy& study) override;
  absl::StatusOr<AddStudyResult> PreviewStudy(const NewStudy& study) override;
  absl::StatusOr<std::vector<StoredPlanCell>> PlanCells(const std::string& study) override;
  absl::StatusOr<StudyListing> ListStudyPage(const StudyQuery& query) override;
  using StudyStore::GetStudy;
  absl::StatusOr<StudyDetail> GetStudy(const std::string& name, const CellPage& page) override;
  absl::StatusOr<std::vector<CellInfo>> FindCells(const std::string& study,
                                                  const CellFilter& filter) override;
  absl::StatusOr<std::vector<std::string>> ResolveCellIds(
      const std::string& study, const std::vector<std::string>& ids) override;
  absl::StatusOr<RegisteredWorker> RegisterWorker(const WorkerRegistration& worker) override;
  absl::Status AuthenticateWorker(const std::string& worker_id, const std::string& secret) override;
  using WorkerStore::ListWorkers;
  absl::StatusOr<WorkerPage> ListWorkers(const WorkerQuery& query) override;

  absl::Status DeregisterWorker(const std::string& worker_id) override;
  absl::StatusOr<std::optional<ClaimedJob>> ClaimNextCell(
      const std::string& worker_id, const std::vector<std::string>& free_devices) override;
  absl::StatusOr<int> CountWaitingCells(const std::string& worker_id) override;
  absl::StatusOr<LeaseStatus> RecordProgress(const std::string& lease_id,
                                             std::optional<int64_t> tokens_done,
                                             double tokens_per_second) override;
  absl::StatusOr<int> AddMetrics(const std::string& lease_id,
                                 const std::vector<MetricPoint>& points) override;
  absl::Status FinishAttempt(const std::string& lease_id, const AttemptEnd& end) override;
  absl::Status ExpireAttempt(const std::string& lease_id, const std::string& reason,
                             int64_t stop_margin_ms) override;
  absl::Status HandBackAttempt(const std::string& lease_id, const std::string& reason) override;
  absl::StatusOr<std::string> LeaseHolder(const std::string& lease_id) override;
  absl::StatusOr<int> CancelCells(const std::string& study,
                                  const std::vector<std::string>& cell_ids) override;
  absl::StatusOr<int> RerunCells(const RerunRequest& request) override;
  absl::StatusOr<std::vector<RunningAttempt>> RunningAttempts() override;
  using ResultStore::Results;
  absl::StatusOr<ResultPage> Results(const std::string& study, const CellPage& page) override;
  absl::StatusOr<StudySnapshot> SnapshotStudy(const std::string& name) override;
  absl::StatusOr<std::vector<CellEvent>> StudyEvents(const std::string& study, int64_t after_seq,
                                                     int limit) override;
  absl::StatusOr<std::vector<CellEvent>> EventsAfter(int64_t after_seq, int limit) override;
  absl::StatusOr<int64_t> LastEventSeq() override;
  int64_t ChangeVersion() override;
  int64_t WaitForChange(int64_t seen, int64_t timeout_ms) override;
  absl::StatusOr<int> AppendLogs(const std::string& lease_id,
                                 const std::vector<LogLine>& lines) override;
  absl::StatusOr<LogChunk> ReadLogs(const LogQuery& query) override;
  absl::StatusOr<std::vector<std::pair<std::string, int>>> MetricNames(
      const std::string& study) override;
  absl::StatusOr<CellOutputs> DescribeCell(const std::string& study,
                                           const std::string& cell_id) override;
  absl::Status RecordExport(const std::string& study, const std::string& cell_id,
                            const CellExport& exported) override;
  absl::Status ForEachMetricPoint(
      const std::string& study, const std::vector<std::string>& metrics,
      const std::vector<std::string>& cell_ids,
      const std::function<bool(const std::string& cell_id, const std::string& metric,
                               int64_t tokens, double value, int64_t at_unix_ms)>& point) override;
  // sqlite_instance.cc
  absl::StatusOr<ServingStart> StartServing(int64_t highest_generation_seen,
                                            int64_t claim_wait_ms) override;
  absl::StatusOr<db::InstanceInfo> Instance() override;
  absl::Status RecordBackup(const db::RecordedBackup& backup) override;
  absl::StatusOr<std::vector<db::RecordedBackup>> RecordedBackups() override;
  absl::Status ForgetBackup(const std::string& path) override;
  absl::StatusOr<TokenRecord> AddToken(const TokenRecord& token) override;
  absl::StatusOr<TokenRecord> RevokeToken(const std::string& name,
                                          const std::string& revoked_by) override;
  absl::StatusOr<std::vector<TokenRecord>> ListTokens() override;
  absl::Status AppendAudit(const AuditRecord& entry) override;
  absl::StatusOr<AuditPage> ReadAudit(const AuditQuery& query) override;

 private:
  SqliteStore(std::unique_ptr<db::WriteQueue> writer, std::unique_ptr<db::ReadPool> readers,
              const common::Clock& clock, RetryPolicy policy, const Options& options)
      : writer_(std::move(writer)),
        readers_(std::move(readers)),
        max_workers_(options.max_workers),
        forget_workers_after_(options.forget_workers_after),
        max_live_tokens_(options.max_live_tokens),
        max_token_rows_(options.max_token_rows),
        max_audit_entries_(options.max_audit_entries),
        clock_(clock),
        policy_(policy) {}
  // Read-only: `versions` (a read-only connection) tells other processes' commits apart.
  SqliteStore(std::unique_ptr<db::ReadPool> readers, std::unique_ptr<db::Connection> versions,
              const common::Clock& clock, const Options& options)
      : readers_(std::move(readers)),
        versions_(std::move(versions)),
        change_poll_ms_(options.change_poll_ms),
        clock_(clock),
        policy_(RetryPolicy()) {}

  // What every write returns on a read-only store (FailedPrecondition naming the file).
  absl::Status ReadOnlyError() const;

  // Before a registration: when max_workers_ rows exist, forgets the stalest workers that ran
  // nothing (Options::max_workers); ResourceExhausted when none may be forgotten. On the writer.
  absl::Status MakeRoomForAWorker(db::Connection& db, int64_t now);
  // The lifecycle's context now: the retry policy, the wall time, `stop_margin_ms` and the
  // generation's attempt floor.
  life::Context LifeContext(int64_t stop_margin_ms) const;
  // Takes the generation and the claims' opening from the instance row as it now is.
  void AdoptInstance(const db::InstanceInfo& info);

  // Runs `op` on a reader (or, for an in-memory database, on the writer, changing nothing).
  template <typename T>
  absl::StatusOr<T> Read(std::function<absl::StatusOr<T>(db::Connection&)> op) {
    if (readers_) return readers_->Run<T>(op);
    return writer_->Run<T>(std::move(op), /*roll_back=*/true);
  }
  template <typename T>
  absl::StatusOr<T> Write(std::function<absl::StatusOr<T>(db::Connection&)> op) {
    if (!writer_) return ReadOnlyError();
    return writer_->Run<T>(std::move(op));
  }

  std::unique_ptr<db::WriteQueue> writer_;  // null when read-only
  std::unique_ptr<db::ReadPool> readers_;   // null for an in-memory database
  // Read-only only: the connection whose PRAGMA data_version is the change counter.
  // Held while a submission is written (its transactions follow its plan).
  common::Mutex submissions_mu_;
  mutable common::Mutex versions_mu_;
  std::unique_ptr<db::Connection> versions_ ABSL_GUARDED_BY(versions_mu_);
  const int change_poll_ms_ = 100;
  const int64_t max_workers_ = 100'000;
  const std::chrono::milliseconds forget_workers_after_{std::chrono::hours(1)};
  const int64_t max_live_tokens_ = kMaxLiveTokens;
  const int64_t max_token_rows_ = kMaxTokenRows;
  const int64_t max_audit_entries_ = kMaxAuditEntries;
  const common::Clock& clock_;
  const RetryPolicy policy_;
  // The database's generation (db/instance.h) and when claims open, as of the last
  // AdoptInstance: attempts of earlier generations are refused, new ones numbered above its floor.
  std::atomic<int64_t> generation_{1};
  std::atomic<int64_t> claims_from_unix_ms_{0};
};

}  // namespace onset::coordinator
