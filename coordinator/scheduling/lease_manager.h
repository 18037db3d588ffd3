// Leases: which worker runs which attempt, and until when. A lease lives for `ttl` after it was
// granted or last renewed by a heartbeat; past that it expires: its attempt ends as "lost" and
// the cell may be claimed again once `stop_margin` has passed too (the worker stops its trainer
// before its own view of the lease runs out, cell_lifecycle.h). Deadlines are monotonic times
// from the injected Clock and live only in memory; the LeaseStore holds the attempts themselves and
// fences every call (only the cell's current open attempt is heard).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/clock.h"
#include "common/log_throttle.h"
#include "common/mutex.h"
#include "coordinator/scheduling/lease_observer.h"
#include "coordinator/store/lease_store.h"
#include "coordinator/store/log_store.h"

namespace onset::coordinator {

// Thread-safe: all methods may be called concurrently (gRPC handler threads and the sweeper).
// The map of leases is guarded by one mutex, which is never held across a store call: a slow
// write (a large cancel, a busy disk) delays only the calls that wait for the store, never the
// lease checks of every other worker. Each operation checks or changes the map under the mutex
// and writes without it; the store serialises the writes and refuses one for an attempt that
// ended meanwhile (FailedPrecondition), which is how a finish and an expiry of one lease that
// race are settled. A lease being expired is taken out of the map first, so no call acts on it
// while its attempt is requeued.
class LeaseManager {
 public:
  // The stores and `clock` must outlive the manager (`logs` takes the trainers' log lines under
  // their leases). `ttl` > 0, `stop_margin` >= 0.
  LeaseManager(LeaseStore* store, LogStore* logs, const common::Clock* clock,
               std::chrono::milliseconds ttl,
               std::chrono::milliseconds stop_margin = std::chrono::milliseconds(0));

  // Says whether the trainer of an attempt found open at a restart is gone, waiting for it as
  // long as it takes to know (killing it if need be); an error when it cannot be known.
  using TrainerGone = std::function<absl::Status(const RunningAttempt&)>;

  // Adopts the attempts the store says are running (after a restart): each gets a fresh
  // deadline of now + ttl, so a worker that is still running it can resume heartbeating. With
  // `requeue_running` (the embedded single-machine mode, whose workers died with the previous
  // process) they are handed back instead, each once `trainer_gone` says its trainer is gone:
  // never while it may still write. An attempt whose trainer's end cannot be established is
  // adopted like the others and left to expire.
  absl::Status Recover(bool requeue_running, const TrainerGone& trainer_gone = nullptr);

  // Claims the next queued cell that fits in `free_devices` for `worker_id` (Store::
  // ClaimNextCell). nullopt when none is queued. FailedPrecondition for an unregistered worker,
  // InvalidArgument for a bad device list.
  absl::StatusOr<std::optional<ClaimedJob>> LeaseJob(const std::string& worker_id,
                                                     const std::vector<std::string>& free_devices);

  // The following act only for the worker holding the lease, while the lease is the current one
  // of its cell: they fail with FailedPrecondition, and write nothing, when the lease is unknown,
  // expired, ended, or held by another worker; the worker must stop that job. Worker ids and
  // lease ids are random and only ever told to the worker they belong to, so together they are
  // that worker's proof of holding the lease.

  // Renews the lease to now + ttl and records progress (`tokens_done` nullopt: kept as it was).
  // The status says whether the cell was cancelled meanwhile (the worker then stops the trainer
  // and reports kCancelled).
  absl::StatusOr<LeaseStatus> Heartbeat(const std::string& worker_id, const std::string& lease_id,
                                        std::optional<int64_t> tokens_done,
                                        double tokens_per_second);
  // Stores the points (idempotent); returns how many were accepted.
  absl::StatusOr<int> ReportMetrics(const std::string& worker_id, const std::string& lease_id,
                                    const std::vector<MetricPoint>& points);
  // Stores trainer log lines (idempotent per line number); returns how many were accepted.
  absl::StatusOr<int> AppendLogs(const std::string& worker_id, const std::string& lease_id,
                                 const std::vector<LogLine>& lines);
  // Ends the attempt and releases the lease. Unlike the calls above it is heard after the lease
  // expired too (a success then stands while the cell was not claimed again); the store decides.
  absl::Status FinishJob(const std::string& worker_id, const std::string& lease_id,
                         const AttemptEnd& end);

  // Expires every lease whose deadline has passed on the clock: ends its attempt as lost and
  // requeues the cell. Returns how many leases expired. Store failures leave the lease in place
  // for the next call.
  int ExpireLeases();

  // Tells `observer` (which must outlive the manager) of every cell whose points were stored and
  // every attempt that ended by FinishJob or expiry. Set before the first call; none by default.
  void set_observer(LeaseObserver* observer) { observer_ = observer; }

  std::chrono::milliseconds ttl() const { return ttl_; }
  std::chrono::milliseconds stop_margin() const { return stop_margin_; }
  size_t ActiveLeases() const;
  // Leases expired since this manager started (by a sweep or found expired on a call).
  int64_t ExpiredLeases() const { return expired_.load(std::memory_order_relaxed); }

 private:
  struct Lease {
    std::string worker_id;
    std::string study;
    std::string cell_id;
    int attempt = 0;
    common::Clock::MonotonicTime deadline;
  };

  // OK when `worker_id` holds the lease and it has not expired; an expired one is expired here
  // (FailedPrecondition). Takes mu_, and releases it before any store call.
  absl::Status Check(const std::string& worker_id, const std::string& lease_id)
      ABSL_LOCKS_EXCLUDED(mu_);
  // FailedPrecondition for an unknown lease or another worker's; else whether it is still
  // within its deadline.
  absl::StatusOr<bool> CheckLocked(const std::string& worker_id, const std::string& lease_id)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Drops the lease when the store says its attempt is gone.
  void ForgetIfEnded(const std::string& lease_id, const absl::Status& status)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Requeues the attempt of `lease`, which the caller has taken out of the map (a store failure
  // puts it back for the next sweep).
  absl::Status Expire(const std::string& lease_id, const Lease& lease) ABSL_LOCKS_EXCLUDED(mu_);

  LeaseStore* const store_;
  LogStore* const logs_;
  const common::Clock* const clock_;
  const std::chrono::milliseconds ttl_;
  const std::chrono::milliseconds stop_margin_;

  LeaseObserver* observer_ = nullptr;
  std::atomic<int64_t> expired_{0};
  mutable common::Mutex mu_;
  std::map<std::string, Lease> leases_ ABSL_GUARDED_BY(mu_);  // by lease id
  common::LogThrottle expire_failures_ ABSL_GUARDED_BY(mu_);
};

}  // namespace onset::coordinator
