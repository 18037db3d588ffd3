// Store on one SQLite file (schema in db/migrations/).
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "common/clock.h"
#include "coordinator/store.h"
#include "db/sqlite.h"

namespace onset::coordinator {

// One connection guarded by a mutex: every method runs under it, writes in BEGIN IMMEDIATE
// transactions. Several SqliteStores (or processes) may share one file; SQLite's locking and
// busy_timeout serialise their writes. Timestamps come from `clock` (wall time).
class SqliteStore final : public Store {
 public:
  // Opens `path` (creating it and its parent directories; ":memory:" for a private in-memory
  // database) and migrates it to the latest schema. `clock` must outlive the store.
  // Errors: FailedPrecondition for a database written by a newer onset; Unavailable/Internal
  // otherwise, naming the file.
  static absl::StatusOr<std::unique_ptr<SqliteStore>> Open(const std::string& path,
                                                           const common::Clock& clock,
                                                           RetryPolicy policy = RetryPolicy());

  absl::StatusOr<AddStudyResult> AddStudy(const NewStudy& study) override;
  absl::StatusOr<AddStudyResult> PreviewStudy(const NewStudy& study) override;
  absl::StatusOr<std::vector<StudyInfo>> ListStudies() override;
  absl::StatusOr<StudyDetail> GetStudy(const std::string& name) override;
  absl::StatusOr<std::string> RegisterWorker(const WorkerRegistration& worker) override;
  absl::StatusOr<std::vector<WorkerInfo>> ListWorkers() override;
  absl::StatusOr<std::optional<ClaimedJob>> ClaimNextCell(const std::string& worker_id) override;
  absl::StatusOr<LeaseStatus> RecordProgress(const std::string& lease_id, int64_t tokens_done,
                                             double tokens_per_second) override;
  absl::StatusOr<int> AddMetrics(const std::string& lease_id,
                                 const std::vector<MetricPoint>& points) override;
  absl::Status FinishAttempt(const std::string& lease_id, const AttemptEnd& end) override;
  absl::Status RequeueAttempt(const std::string& lease_id, const std::string& reason) override;
  absl::StatusOr<int> CancelCells(const std::string& study,
                                  const std::vector<std::string>& cell_ids) override;
  absl::StatusOr<int> RerunCells(const RerunRequest& request) override;
  absl::StatusOr<std::vector<RunningAttempt>> RunningAttempts() override;
  absl::StatusOr<std::vector<CellResult>> Results(const std::string& study) override;

 private:
  struct OpenAttempt {
    int64_t id;
    int64_t cell_id;
    std::string worker_id;
    CellState cell_state;
    int failures;  // the cell's counted failures so far
  };

  SqliteStore(std::unique_ptr<db::Connection> db, const common::Clock& clock, RetryPolicy policy)
      : db_(std::move(db)), clock_(clock), policy_(policy) {}

  // AddStudy, or with `write` false PreviewStudy.
  absl::StatusOr<AddStudyResult> AddOrPreviewStudy(const NewStudy& study, bool write);

  // Helpers; the caller holds mu_.
  absl::StatusOr<std::vector<CellSpec>> LoadCellSpecs(int64_t study_id);
  absl::StatusOr<int64_t> StudyId(const std::string& name);
  absl::StatusOr<StudyInfo> LoadStudy(int64_t study_id);
  absl::StatusOr<std::vector<CellInfo>> LoadCells(int64_t study_id);
  absl::StatusOr<OpenAttempt> FindOpenAttempt(const std::string& lease_id);
  // Ends the attempt with `outcome` and applies the failure policy to its cell.
  absl::Status EndAttempt(const std::string& lease_id, const AttemptEnd& end, bool lost);
  std::string RepeatedFailureAlert(int64_t study_id);
  // The ids (rows) of the given cells of a study; NotFound naming an unknown one.
  absl::StatusOr<std::vector<int64_t>> CellRows(int64_t study_id,
                                                const std::vector<std::string>& cell_ids);

  std::mutex mu_;
  std::unique_ptr<db::Connection> db_;  // guarded by mu_
  const common::Clock& clock_;
  const RetryPolicy policy_;
};

}  // namespace onset::coordinator
