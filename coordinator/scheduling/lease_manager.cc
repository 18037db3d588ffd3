#include "coordinator/scheduling/lease_manager.h"

#include <spdlog/spdlog.h>

#include "common/status_macros.h"

namespace onset::coordinator {
namespace {

std::string Describe(const std::string& lease_id, const std::string& cell_id, int attempt) {
  return "lease " + lease_id + " (cell " + cell_id + ", attempt " + std::to_string(attempt) + ")";
}

}  // namespace

LeaseManager::LeaseManager(LeaseStore* store, LogStore* logs, const common::Clock* clock,
                           std::chrono::milliseconds ttl, std::chrono::milliseconds stop_margin)
    : store_(store),
      logs_(logs),
      clock_(clock),
      ttl_(ttl),
      stop_margin_(stop_margin),
      expire_failures_(*clock, std::chrono::minutes(1)) {}

absl::Status LeaseManager::Recover(bool requeue_running, const TrainerGone& trainer_gone) {
  ONSET_ASSIGN_OR_RETURN(std::vector<RunningAttempt> running, store_->RunningAttempts());
  for (const RunningAttempt& a : running) {
    const std::string what = Describe(a.lease_id, a.cell_id, a.attempt);
    if (requeue_running) {
      // Only the embedded mode asks for this: its workers stopped with the previous process,
      // which is a hand-back, not a failure of the cell, once the trainer is gone too.
      absl::Status gone = trainer_gone ? trainer_gone(a) : absl::OkStatus();
      if (gone.ok()) {
        ONSET_RETURN_IF_ERROR(store_->HandBackAttempt(
            a.lease_id, "the coordinator restarted while the attempt ran; its trainer is gone"));
        spdlog::info("requeued cell {} of study {}: {} was running at restart", a.cell_id, a.study,
                     what);
        continue;
      }
      spdlog::warn(
          "{} of study {} was running at restart and its trainer may still run ({}): "
          "left to expire",
          what, a.study, std::string(gone.message()));
    }
    common::MutexLock lock(&mu_);
    leases_[a.lease_id] =
        Lease{a.worker_id, a.study, a.cell_id, a.attempt, clock_->MonotonicNow() + ttl_};
  }
  return absl::OkStatus();
}

absl::StatusOr<std::optional<ClaimedJob>> LeaseManager::LeaseJob(
    const std::string& worker_id, const std::vector<std::string>& free_devices) {
  // The claim is a write and runs without mu_: no call can name the new lease before this one
  // returns it, and the store's writer serialises claims.
  ONSET_ASSIGN_OR_RETURN(std::optional<ClaimedJob> job,
                         store_->ClaimNextCell(worker_id, free_devices));
  if (job) {
    common::MutexLock lock(&mu_);
    leases_[job->lease_id] =
        Lease{worker_id, job->study, job->cell_id, job->attempt, clock_->MonotonicNow() + ttl_};
  }
  return job;
}

absl::Status LeaseManager::Check(const std::string& worker_id, const std::string& lease_id) {
  std::optional<Lease> expired;
  {
    common::MutexLock lock(&mu_);
    absl::StatusOr<bool> current = CheckLocked(worker_id, lease_id);
    if (!current.ok()) return current.status();
    if (*current) return absl::OkStatus();
    // Taken out of the map now, so no other call acts on it while it is expired below.
    expired = leases_.at(lease_id);
    leases_.erase(lease_id);
  }
  // Expire now rather than waiting for the sweeper, so the answer is final.
  const std::string what = Describe(lease_id, expired->cell_id, expired->attempt);
  if (absl::Status s = Expire(lease_id, *expired); !s.ok()) return s;
  return absl::FailedPreconditionError(what + " has expired; the cell was requeued; stop the job");
}

absl::StatusOr<bool> LeaseManager::CheckLocked(const std::string& worker_id,
                                               const std::string& lease_id) {
  auto it = leases_.find(lease_id);
  if (it == leases_.end()) {
    return absl::FailedPreconditionError("lease " + lease_id +
                                         " is unknown or has expired; stop the job");
  }
  Lease& lease = it->second;
  const std::string what = Describe(lease_id, lease.cell_id, lease.attempt);
  if (lease.worker_id != worker_id) {
    // The holder's id stays in the log: with the lease id it would let the caller act as the
    // holder.
    spdlog::warn("{} is held by worker {}; refused a call from worker {}", what, lease.worker_id,
                 worker_id);
    return absl::FailedPreconditionError(what + " is held by another worker; stop the job");
  }
  return clock_->MonotonicNow() <= lease.deadline;
}

void LeaseManager::ForgetIfEnded(const std::string& lease_id, const absl::Status& status) {
  if (absl::IsFailedPrecondition(status)) leases_.erase(lease_id);
}

absl::StatusOr<LeaseStatus> LeaseManager::Heartbeat(const std::string& worker_id,
                                                    const std::string& lease_id,
                                                    std::optional<int64_t> tokens_done,
                                                    double tokens_per_second) {
  ONSET_RETURN_IF_ERROR(Check(worker_id, lease_id));
  // The store call runs without mu_, so that many workers' reports reach the store's writer
  // together and share its transactions. The store checks again that the attempt is open, so an
  // expiry or finish in between makes this fail rather than write for an ended attempt.
  absl::StatusOr<LeaseStatus> s = store_->RecordProgress(lease_id, tokens_done, tokens_per_second);
  common::MutexLock lock(&mu_);
  ForgetIfEnded(lease_id, s.status());
  if (!s.ok()) return s.status();
  if (auto it = leases_.find(lease_id); it != leases_.end()) {
    it->second.deadline = clock_->MonotonicNow() + ttl_;
  }
  return s;
}

absl::StatusOr<int> LeaseManager::ReportMetrics(const std::string& worker_id,
                                                const std::string& lease_id,
                                                const std::vector<MetricPoint>& points) {
  ONSET_RETURN_IF_ERROR(Check(worker_id, lease_id));
  absl::StatusOr<int> n = store_->AddMetrics(lease_id, points);  // without mu_, as Heartbeat
  common::MutexLock lock(&mu_);
  ForgetIfEnded(lease_id, n.status());
  if (observer_ != nullptr && n.ok() && *n > 0) {
    if (auto it = leases_.find(lease_id); it != leases_.end()) {
      observer_->PointsStored(it->second.study, it->second.cell_id);
    }
  }
  return n;
}

absl::StatusOr<int> LeaseManager::AppendLogs(const std::string& worker_id,
                                             const std::string& lease_id,
                                             const std::vector<LogLine>& lines) {
  ONSET_RETURN_IF_ERROR(Check(worker_id, lease_id));
  absl::StatusOr<int> n = logs_->AppendLogs(lease_id, lines);  // without mu_, as Heartbeat
  common::MutexLock lock(&mu_);
  ForgetIfEnded(lease_id, n.status());
  return n;
}

absl::Status LeaseManager::FinishJob(const std::string& worker_id, const std::string& lease_id,
                                     const AttemptEnd& end) {
  bool known = false;
  std::string study;
  std::string cell_id;
  {
    common::MutexLock lock(&mu_);
    if (auto it = leases_.find(lease_id); it != leases_.end()) {
      known = true;
      study = it->second.study;
      cell_id = it->second.cell_id;
    }
  }
  if (known) {
    // An expired lease is expired here first; its success is still heard below.
    absl::Status checked = Check(worker_id, lease_id);
    if (!checked.ok() && !absl::IsFailedPrecondition(checked)) return checked;
    common::MutexLock lock(&mu_);
    if (auto it = leases_.find(lease_id);
        it != leases_.end() && it->second.worker_id != worker_id) {
      return absl::FailedPreconditionError(
          Describe(lease_id, it->second.cell_id, it->second.attempt) +
          " is held by another worker; stop the job");
    }
  } else {
    // Expired (or adopted by no one after a restart): the store knows whose it was.
    ONSET_ASSIGN_OR_RETURN(std::string holder, store_->LeaseHolder(lease_id));
    if (holder != worker_id) {
      spdlog::warn("lease {} is held by worker {}; refused a report from worker {}", lease_id,
                   holder, worker_id);
      return absl::FailedPreconditionError("lease " + lease_id +
                                           " is held by another worker; stop the job");
    }
  }
  // Without mu_, as Heartbeat. The lease stays in the map meanwhile: a store that fails now
  // (not FailedPrecondition) leaves it to a retry of this call or to expiry, never orphaned.
  absl::Status s = store_->FinishAttempt(lease_id, end);
  if (s.ok() && observer_ != nullptr && !cell_id.empty()) observer_->AttemptEnded(study, cell_id);
  common::MutexLock lock(&mu_);
  if (s.ok() || absl::IsFailedPrecondition(s)) leases_.erase(lease_id);
  return s;
}

absl::Status LeaseManager::Expire(const std::string& lease_id, const Lease& lease) {
  const std::string what = Describe(lease_id, lease.cell_id, lease.attempt);
  // The reason is shown to every client, so it names no worker (the log below does).
  absl::Status s = store_->ExpireAttempt(
      lease_id, "lease expired: no heartbeat for " + std::to_string(ttl_.count()) + " ms",
      stop_margin_.count());
  if (s.ok()) {
    expired_.fetch_add(1, std::memory_order_relaxed);
    if (observer_ != nullptr) observer_->AttemptEnded(lease.study, lease.cell_id);
    spdlog::warn("{} of study {} expired (worker {}); the cell runs again after {} ms", what,
                 lease.study, lease.worker_id, stop_margin_.count());
    return absl::OkStatus();
  }
  if (absl::IsFailedPrecondition(s)) return absl::OkStatus();  // it had ended meanwhile
  // Back into the map, still past its deadline, for the next sweep.
  common::MutexLock lock(&mu_);
  leases_.emplace(lease_id, lease);
  return absl::Status(s.code(), "expiring " + what + ": " + std::string(s.message()));
}

int LeaseManager::ExpireLeases() {
  std::vector<std::pair<std::string, Lease>> expired;
  {
    common::MutexLock lock(&mu_);
    const auto now = clock_->MonotonicNow();
    for (auto it = leases_.begin(); it != leases_.end();) {
      if (now > it->second.deadline) {
        expired.emplace_back(it->first, std::move(it->second));
        it = leases_.erase(it);
      } else {
        ++it;
      }
    }
  }
  // The store writes run without mu_; the expired leases are out of the map meanwhile, so every
  // call naming one is refused as it would be once it is requeued.
  int count = 0;
  int failed = 0;
  absl::Status first;
  for (const auto& [id, lease] : expired) {
    absl::Status s = Expire(id, lease);
    if (s.ok()) {
      ++count;
    } else if (failed++ == 0) {
      first = s;
    }
  }
  // A store that cannot be written fails every expiry of every sweep: one line a minute.
  common::MutexLock lock(&mu_);
  int64_t left_out = 0;
  if (failed > 0 && expire_failures_.Occurred(failed, &left_out)) {
    spdlog::error("could not expire {} of {} leases, kept for the next sweep{}: first: {}", failed,
                  expired.size(),
                  left_out > 0 ? " (" + std::to_string(left_out) + " failures not logged before)"
                               : std::string(),
                  first.ToString());
  } else if (failed == 0 && count > 0 && expire_failures_.Recovered()) {
    spdlog::info("expiring leases works again");
  }
  return count;
}

size_t LeaseManager::ActiveLeases() const {
  common::MutexLock lock(&mu_);
  return leases_.size();
}

}  // namespace onset::coordinator
