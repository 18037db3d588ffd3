// A Store that passes every call to another one, for tests that need to intercept a few calls
// (block one until released, fail one) and keep the real behaviour of the rest.
#pragma once

#include "coordinator/store/store.h"

namespace onset::coordinator::testing {

class ForwardingStore : public Store {
 public:
  explicit ForwardingStore(Store* inner) : inner_(inner) {}

  absl::StatusOr<AddStudyResult> AddStudy(const NewStudy& s) override {
    return inner_->AddStudy(s);
  }
  absl::StatusOr<AddStudyResult> PreviewStudy(const NewStudy& s) override {
    return inner_->PreviewStudy(s);
  }
  absl::StatusOr<std::vector<StoredPlanCell>> PlanCells(const std::string& study) override {
    return inner_->PlanCells(study);
  }
  absl::StatusOr<std::vector<StudyInfo>> ListStudies() override { return inner_->ListStudies(); }
  absl::StatusOr<StudyDetail> GetStudy(const std::string& name, const CellPage& page) override {
    return inner_->GetStudy(name, page);
  }
  absl::StatusOr<std::vector<CellInfo>> FindCells(const std::string& study,
                                                  const CellFilter& filter) override {
    return inner_->FindCells(study, filter);
  }
  absl::StatusOr<std::vector<std::string>> ResolveCellIds(
      const std::string& study, const std::vector<std::string>& ids) override {
    return inner_->ResolveCellIds(study, ids);
  }
  absl::StatusOr<RegisteredWorker> RegisterWorker(const WorkerRegistration& worker) override {
    return inner_->RegisterWorker(worker);
  }
  absl::Status AuthenticateWorker(const std::string& worker_id,
                                  const std::string& secret) override {
    return inner_->AuthenticateWorker(worker_id, secret);
  }
  using Store::ListWorkers;
  absl::StatusOr<WorkerPage> ListWorkers(const WorkerQuery& query) override {
    return inner_->ListWorkers(query);
  }
  absl::Status DeregisterWorker(const std::string& worker_id) override {
    return inner_->DeregisterWorker(worker_id);
  }
  absl::StatusOr<std::optional<ClaimedJob>> ClaimNextCell(
      const std::string& worker_id, const std::vector<std::string>& free_devices) override {
    return inner_->ClaimNextCell(worker_id, free_devices);
  }
  absl::StatusOr<int> CountWaitingCells(const std::string& worker_id) override {
    return inner_->CountWaitingCells(worker_id);
  }
  absl::StatusOr<LeaseStatus> RecordProgress(const std::string& lease_id,
                                             std::optional<int64_t> tokens_done,
                                             double tokens_per_second) override {
    return inner_->RecordProgress(lease_id, tokens_done, tokens_per_second);
  }
  absl::StatusOr<int> AddMetrics(const std::string& lease_id,
                                 const std::vector<MetricPoint>& points) override {
    return inner_->AddMetrics(lease_id, points);
  }
  absl::Status FinishAttempt(const std::string& lease_id, const AttemptEnd& end) override {
    return inner_->FinishAttempt(lease_id, end);
  }
  absl::Status ExpireAttempt(const std::string& lease_id, const std::string& reason,
                             int64_t stop_margin_ms) override {
    return inner_->ExpireAttempt(lease_id, reason, stop_margin_ms);
  }
  absl::Status HandBackAttempt(const std::string& lease_id, const std::string& reason) override {
    return inner_->HandBackAttempt(lease_id, reason);
  }
  absl::StatusOr<std::string> LeaseHolder(const std::string& lease_id) override {
    return inner_->LeaseHolder(lease_id);
  }
  absl::StatusOr<int> CancelCells(const std::string& study,
                                  const std::vector<std::string>& cell_ids) override {
    return inner_->CancelCells(study, cell_ids);
  }
  absl::StatusOr<int> RerunCells(const RerunRequest& request) override {
    return inner_->RerunCells(request);
  }
  absl::StatusOr<std::vector<RunningAttempt>> RunningAttempts() override {
    return inner_->RunningAttempts();
  }
  absl::StatusOr<ResultPage> Results(const std::string& study, const CellPage& page) override {
    return inner_->Results(study, page);
  }
  absl::StatusOr<StudySnapshot> SnapshotStudy(const std::string& name) override {
    return inner_->SnapshotStudy(name);
  }
  absl::StatusOr<std::vector<CellEvent>> StudyEvents(const std::string& study, int64_t after_seq,
                                                     int limit) override {
    return inner_->StudyEvents(study, after_seq, limit);
  }
  int64_t ChangeVersion() override { return inner_->ChangeVersion(); }
  int64_t WaitForChange(int64_t seen, int64_t timeout_ms) override {
    return inner_->WaitForChange(seen, timeout_ms);
  }
  absl::StatusOr<int> AppendLogs(const std::string& lease_id,
                                 const std::vector<LogLine>& lines) override {
    return inner_->AppendLogs(lease_id, lines);
  }
  absl::StatusOr<LogChunk> ReadLogs(const LogQuery& query) override {
    return inner_->ReadLogs(query);
  }
  absl::StatusOr<std::vector<std::pair<std::string, int>>> MetricNames(
      const std::string& study) override {
    return inner_->MetricNames(study);
  }
  absl::Status ForEachMetricPoint(const std::string& study, const std::vector<std::string>& metrics,
                                  const std::vector<std::string>& cell_ids,
                                  const std::function<bool(const std::string&, const std::string&,
                                                           int64_t, double)>& point) override {
    return inner_->ForEachMetricPoint(study, metrics, cell_ids, point);
  }

 protected:
  Store* const inner_;
};

}  // namespace onset::coordinator::testing
