// The thread behind a mirror of the cells (a TensorBoard directory, an MLflow server): the lease
// manager tells it which cells changed (LeaseObserver) and returns at once; every `interval` the
// thread hands each changed cell to the sink, which reads the cell from the store and brings
// its mirror up to date. A cell that changes many times within an interval is synced once.
//
// A sync that fails keeps its cell pending for the next interval. When the sink cannot be
// reached (Unavailable, DeadlineExceeded) the pass ends there (the cells after it wait too: a
// sink that is down would fail each after its own timeout); a cell the sink refuses otherwise
// holds up no other. Failures cost a warning per log_interval at most. A sync that finds the
// cell gone (NotFound) drops it.
// Pending cells are bounded by max_pending: beyond, a newly changed cell is left out (counted,
// logged); its mirror catches up at its next change, since each sync reads the cell's whole
// state from the store. Nothing here waits for the sink but the thread.
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <thread>
#include <utility>

#include "absl/status/status.h"
#include "common/clock.h"
#include "common/log_throttle.h"
#include "common/mutex.h"
#include "coordinator/scheduling/lease_observer.h"

namespace onset::coordinator {

// Where cells are mirrored.
class CellSink {
 public:
  virtual ~CellSink() = default;
  // Brings the mirror of the cell up to date with the store. An error: try again later.
  virtual absl::Status Sync(const std::string& study, const std::string& cell_id) = 0;
};

class CellSyncLoop : public LeaseObserver {
 public:
  struct Options {
    std::chrono::milliseconds interval{1'000};
    size_t max_pending = 100'000;
    std::chrono::milliseconds log_interval{60'000};
  };

  struct Stats {
    int64_t synced = 0;   // syncs that succeeded
    int64_t failed = 0;   // syncs that failed (each retried)
    int64_t gone = 0;     // cells found gone (NotFound), dropped
    int64_t dropped = 0;  // changes left out because max_pending cells were waiting
    int64_t pending = 0;  // cells waiting now
  };

  // `name` says which mirror in log lines ("tensorboard"); `sink` and `clock` must outlive the
  // loop. No thread until Start().
  CellSyncLoop(std::string name, CellSink* sink, const common::Clock* clock,
               const Options& options);
  ~CellSyncLoop() override;  // Stop()
  CellSyncLoop(const CellSyncLoop&) = delete;
  CellSyncLoop& operator=(const CellSyncLoop&) = delete;

  void Start();
  // Syncs what is pending once more, then ends the thread. Idempotent.
  void Stop();

  void PointsStored(const std::string& study, const std::string& cell_id) override;
  void AttemptEnded(const std::string& study, const std::string& cell_id) override;

  // Syncs every pending cell on the calling thread (the thread's pass, for tests).
  void SyncPending();

  Stats stats() const;

 private:
  using Cell = std::pair<std::string, std::string>;  // study, cell id

  void Mark(const std::string& study, const std::string& cell_id);
  void Loop();

  const std::string name_;
  CellSink* const sink_;
  const Options options_;

  mutable common::Mutex mu_;
  std::condition_variable_any wake_;
  std::set<Cell> pending_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  int64_t dropped_ ABSL_GUARDED_BY(mu_) = 0;
  common::LogThrottle overflow_log_ ABSL_GUARDED_BY(mu_);

  mutable common::Mutex sync_mu_;  // one pass at a time (the thread's and SyncPending's)
  int64_t synced_ ABSL_GUARDED_BY(sync_mu_) = 0;
  int64_t failed_ ABSL_GUARDED_BY(sync_mu_) = 0;
  int64_t gone_ ABSL_GUARDED_BY(sync_mu_) = 0;
  common::LogThrottle failure_log_ ABSL_GUARDED_BY(sync_mu_);

  common::Mutex stop_mu_;  // held through Stop: the thread is joined once
  std::thread thread_;
};

}  // namespace onset::coordinator
