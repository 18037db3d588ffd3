// The /metrics page of onsetd: what an operator scrapes with Prometheus to learn, before a user
// complains, that workers stopped, a queue stalled, leases keep expiring, the database slows
// down or the disk fills. docs/operating-onsetd.md lists every family and the alert rules to
// start from.
//
// Everything is read when the page is asked for (no sampling thread): cell counts and live
// workers from the store's readers (never the writer), the rest from counters in memory. The
// page stays bounded whatever the coordinator holds: at most `max_studies` studies are
// labelled (those with cells queued, running or backing off first, then the newest), the others
// summed under study="_other" (no study name starts with '_'); RPC methods are bounded by
// RpcMetrics.
//
// Thread-safety: Render may be called from any thread, concurrently.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include "common/clock.h"
#include "coordinator/monitoring/rpc_metrics.h"
#include "coordinator/store/study_store.h"
#include "coordinator/store/worker_store.h"
#include "db/write_queue.h"

namespace onset::coordinator {

// What the webhook queues did (coordinator/notify/notifier.h), summed over their URLs.
struct NotificationCounts {
  int64_t sent = 0;
  int64_t failed_attempts = 0;
  int64_t dropped = 0;
  int64_t queued = 0;
};

struct MetricsSources {
  StudyStore* studies = nullptr;
  WorkerStore* workers = nullptr;
  std::function<int64_t()> open_leases;     // LeaseManager::ActiveLeases
  std::function<int64_t()> expired_leases;  // LeaseManager::ExpiredLeases
  std::function<db::WriteQueue::Stats()> writer;
  const RpcMetrics* rpcs = nullptr;
  // Unset: no webhooks configured, the families left out.
  std::function<NotificationCounts()> notifications;
  // The database file: its size, its WAL's and the free space of its file system. Empty or an
  // in-memory database: those families are left out.
  std::string db_path;
  const common::Clock* clock = nullptr;
  // A worker seen within this window is live (kWorkerLiveWindow).
  std::chrono::milliseconds live_window{600'000};
  int max_studies = 50;
  std::string version;  // onset's, for onset_build_info
};

class CoordinatorMetrics {
 public:
  // Every pointer and function in `sources` must outlive this object. The process's start is
  // taken as now.
  explicit CoordinatorMetrics(MetricsSources sources);

  // The page in the Prometheus text format (common/prometheus_text.h). A store that cannot be
  // read leaves its families out and sets onset_store_read_ok to 0; the rest is still served.
  std::string Render() const;

 private:
  const MetricsSources sources_;
  const int64_t started_unix_ms_;
  const common::Clock::MonotonicTime started_;
};

}  // namespace onset::coordinator
