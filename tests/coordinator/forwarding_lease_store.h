// A LeaseStore that passes every call to another one, for tests that intercept a few of the
// lease calls (block one until released, fail one) and keep the real behaviour of the rest.
// The other areas of the store are the real one's, passed as they are.
#pragma once

#include "coordinator/store/lease_store.h"

namespace onset::coordinator::testing {

class ForwardingLeaseStore : public LeaseStore {
 public:
  explicit ForwardingLeaseStore(LeaseStore* inner) : inner_(inner) {}

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
  absl::StatusOr<std::vector<RunningAttempt>> RunningAttempts() override {
    return inner_->RunningAttempts();
  }

 protected:
  LeaseStore* const inner_;
};

}  // namespace onset::coordinator::testing
