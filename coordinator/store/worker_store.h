// The store's workers: registration, the secret that proves a worker's calls, listings in pages,
// deregistration.
//
// Thread-safety: implementations are safe to call from any thread. Errors shared by all methods:
// Unavailable (may pass: busy, disk full) or Internal for database failures (the message names
// the file; db/sqlite.h maps SQLite's errors).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "coordinator/cells/worker_slots.h"

namespace onset::coordinator {

inline constexpr size_t kMaxDeviceNameBytes = 64;
// A list of device names as the store keeps them: each non-empty and without commas, none
// repeated, at most kMaxWorkerDevices. InvalidArgument naming `field` and the bad name.
absl::Status CheckDeviceNames(const std::vector<std::string>& devices, const std::string& field);

// A registered worker: its id, public (listings, logs and watch streams show it), and the secret
// only it knows, which every later call for it must carry (WorkerStore::AuthenticateWorker).
struct RegisteredWorker {
  std::string id;
  std::string secret;
};

struct WorkerRegistration {
  std::string host;
  int slots = 1;  // jobs at once; devices.size() when devices are given
  std::string version;
  std::vector<std::string> devices = {};  // "cuda:0", "cpu:1", ...; empty: it names none
  std::string slurm_job = {};  // the Slurm job it runs in ("1234", "1234_5"); empty: none
};

// The Slurm job id a worker may report: at most this long, printable ASCII without spaces.
inline constexpr size_t kMaxSlurmJobBytes = 64;
// InvalidArgument naming `field` when `slurm_job` is not empty and not such an id.
absl::Status CheckSlurmJob(const std::string& slurm_job, const std::string& field);

// An attempt without an end, as found in the database (e.g. after a restart).
struct RunningAttempt {
  std::string lease_id;
  std::string worker_id;
  std::string study;
  std::string cell_id;
  int attempt = 0;
  std::vector<std::string> devices;  // the devices it was given
};

// A registered worker and the attempts it is running.
struct WorkerInfo {
  std::string id;
  std::string host;
  int slots = 1;
  std::string version;
  std::vector<std::string> devices;  // as registered
  std::string slurm_job;             // as registered; empty: none
  int64_t registered_unix_ms = 0;
  int64_t last_seen_unix_ms = 0;  // its latest lease request or heartbeat
  int64_t exited_unix_ms = 0;     // when it said it exits (DeregisterWorker); 0: it has not
  std::vector<RunningAttempt> running;
};

// A worker listing returns at most this many workers.
inline constexpr int kMaxWorkersPerPage = 1000;

// Which registered workers a listing returns: the most recently seen first, a page at a time.
struct WorkerQuery {
  // > 0: only live workers, those that have not exited and were seen at or after this time.
  int64_t live_since_unix_ms = 0;
  int limit = 200;  // workers at most (a worker may name up to kMaxWorkerDevices devices)
  // The page after this worker: its last_seen_unix_ms and id (a page's `next`); none: from the
  // most recently seen.
  std::optional<std::pair<int64_t, std::string>> after;
};

struct WorkerPage {
  std::vector<WorkerInfo> workers;  // each with its running attempts
  int64_t matching = 0;             // workers the query selects from its cursor on (this
                                    // page's and later ones)
  int64_t not_live = 0;             // with live_since: the registered workers left out
  std::optional<std::pair<int64_t, std::string>> next;  // the next page's `after`; none: last
};

// Registered workers.
class WorkerStore {
 public:
  virtual ~WorkerStore() = default;

  // Registers a worker: its new id and secret (only a hash of the secret is kept).
  // InvalidArgument for bad device names (CheckDeviceNames) or a bad Slurm job id
  // (CheckSlurmJob).
  virtual absl::StatusOr<RegisteredWorker> RegisterWorker(const WorkerRegistration& worker) = 0;
  // OK when `secret` is the one `worker_id` was given at registration and it has not
  // deregistered; every call a worker makes for itself is checked so (worker ids are public).
  // FailedPrecondition, saying to register again, for an unknown worker, one that deregistered
  // or one registered before workers had secrets; PermissionDenied for a wrong secret. Reads
  // only.
  virtual absl::Status AuthenticateWorker(const std::string& worker_id,
                                          const std::string& secret) = 0;
  // The registered workers `query` selects, the most recently seen first, with their running
  // attempts: one page, read by index, whatever the number of workers.
  virtual absl::StatusOr<WorkerPage> ListWorkers(const WorkerQuery& query) = 0;
  // Every registered worker (in pages of `query.limit`), for tests and small tools.
  absl::StatusOr<std::vector<WorkerInfo>> ListWorkers() {
    std::vector<WorkerInfo> all;
    WorkerQuery query;
    while (true) {
      absl::StatusOr<WorkerPage> page = ListWorkers(query);
      if (!page.ok()) return page.status();
      for (WorkerInfo& w : page->workers) all.push_back(std::move(w));
      if (!page->next) return all;
      query.after = page->next;
    }
  }
  // The worker exits cleanly: records the time (WorkerInfo::exited_unix_ms), once, and hands
  // back any attempt of it still open (its trainers have stopped: the cells are queued again,
  // no failure counted). NotFound for an unknown worker.
  virtual absl::Status DeregisterWorker(const std::string& worker_id) = 0;
};

}  // namespace onset::coordinator
