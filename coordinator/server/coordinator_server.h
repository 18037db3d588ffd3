// The coordinator as an object: store, scheduler and both gRPC services on one port, with the
// standard gRPC health service (SERVING while it can write its database: health_monitor.h).
// onsetd's main wires flags into ServerConfig and runs one; `onset run` embeds one in-process.
// Every call must carry a bearer token (common/grpc_auth.h) whose role allows it: the token file's
// (an admin's) or one of the database's (`onset token create`, the AccessService); TLS is
// optional, and a port reachable from other machines is refused without it unless insecure
// serving is asked for.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "coordinator/cells/failure_policy.h"
#include "coordinator/mirror/cell_sync_loop.h"
#include "coordinator/notify/notifier.h"
#include "coordinator/store/store.h"
#include "db/backup_file.h"

namespace onset::coordinator {

struct ServerConfig {
  std::string db_path;  // SQLite file, created (with parents) if missing
  // Take an existing 0-byte db_path for a new database; without it such a file is refused
  // (db/startup_checks.h).
  bool init_empty_db = false;
  // Skip PRAGMA quick_check at start (the other start-up checks still run).
  bool skip_quick_check = false;
  std::string listen = "127.0.0.1:7070";  // host:port; port 0 picks a free port
  // The token file's token, an admin's (common/token_registry.h kFileTokenName); the database's
  // tokens are served too. See common/auth_token.h for files.
  std::string token;
  // The file `token` was read from, if any: a backup never replaces it (db/backup_destination.h).
  std::string token_file;
  // PEM files; both set: TLS (read at Start), both empty: plaintext.
  std::string tls_cert_file;
  std::string tls_key_file;
  // Serve a host other than loopback without TLS, the token crossing the network in clear text.
  bool allow_insecure_remote = false;
  std::chrono::milliseconds lease_ttl{30'000};          // a lease not renewed for this long expires
  std::chrono::milliseconds heartbeat_interval{5'000};  // advertised to workers
  // After a lease expires, how long its cell waits before anyone may claim it: the time its
  // worker may still take to stop the trainer (it stops it before its own view of the lease runs
  // out). Unset: one heartbeat interval.
  std::optional<std::chrono::milliseconds> stop_margin;
  // Embedded single-machine mode: no worker outlives the coordinator, so cells left `running`
  // by a previous process are requeued at start instead of waiting for their leases to expire,
  // each once `trainer_gone` says its trainer is gone (LeaseManager::Recover).
  bool requeue_running_on_start = false;
  std::function<absl::Status(const RunningAttempt&)> trainer_gone;
  RetryPolicy retry;  // per-cause failure policy (failure_policy.h)
  // Shared directory for every cell's checkpoints (ROOT/STUDY/CELL), so a cell requeued after a
  // lost worker resumes on another; empty = in each worker's work directory.
  std::string checkpoint_root;
  // The dashboard (dashboard_api.h) over plain HTTP on this host:port; empty = none. Like
  // `listen`, an address reachable from other machines needs allow_insecure_remote.
  std::string http_listen;
  // Prometheus metrics (coordinator/monitoring/) at http://metrics_listen/metrics, for a token of
  // role read or better; empty = none. Like http_listen, loopback unless allow_insecure_remote.
  std::string metrics_listen;
  // Studies labelled on the metrics page; the others are summed (coordinator_metrics.h).
  int metrics_max_studies = 50;
  // Webhooks (coordinator/notify/): each gets a JSON POST when a study ends, a cell fails for
  // good or the last live worker is lost while cells wait. http:// or https:// URLs: secrets,
  // which onsetd reads from a file (notify_url_file.h), never from its command line.
  std::vector<std::string> notify_urls;
  // The file notify_urls were read from, if any: a backup never replaces it either.
  std::string notify_url_file;
  // Options of their queues (retries, backoff, timeouts; notifier.h).
  Notifier::Options notify;
  // TensorBoard (coordinator/mirror/tensorboard_writer.h): each cell's points written as a run
  // under this directory (created) as they arrive; empty = none.
  std::string tensorboard_dir;
  // MLflow (coordinator/mirror/mlflow_writer.h): each cell mirrored as a run of the tracking
  // server at this http(s) URL (no user info: a secret goes in mlflow_token); empty = none.
  std::string mlflow_uri;
  std::string mlflow_token;  // sent as a bearer token (MLFLOW_TRACKING_TOKEN), if any
  std::chrono::milliseconds mlflow_timeout{10'000};  // per call to the server
  // How often the mirrors write, how many changed cells they hold (cell_sync_loop.h).
  CellSyncLoop::Options mirror;
  // How often the health service's probe writes the database (health_monitor.h).
  std::chrono::milliseconds health_interval{5'000};
  // Rotating online backups (db/backup_rotation.h): every backup_every (0: none) a copy into
  // backup_dir, keeping the newest backup_keep of those it wrote, and leaving at least
  // backup_reserve_bytes free on backup_dir's disk.
  std::chrono::seconds backup_every{0};
  std::string backup_dir;
  int backup_keep = 7;
  int64_t backup_reserve_bytes = db::kDefaultBackupReserveBytes;
  // How long a streamed reply may wait for a client that stopped reading before its call is
  // cancelled (coordinator/rpc/write_watchdog.h).
  std::chrono::milliseconds stalled_reader_limit{30'000};

  // Names the first bad field, e.g. "lease_ttl: must exceed heartbeat_interval". Reads no files.
  absl::Status Validate() const;
};

class CoordinatorServer {
 public:
  // Locks the database (db/database_lock.h: one coordinator per file, held until Shutdown),
  // checks it (db/startup_checks.h), opens and migrates it, starts its generation (a backup's
  // copy served for the first time is a restore: InstanceStore::StartServing, with the claims
  // closed for lease_ttl plus the stop margin), binds the port and starts serving.
  // Errors: InvalidArgument for a bad config or TLS file, NotFound for a missing TLS file,
  // Unavailable when the port cannot be bound; for the database (the message names the file and
  // says what to do) FailedPrecondition when another process holds its lock, or it is empty,
  // not a database, not writable or of a newer schema, DataLoss when it is damaged,
  // Internal otherwise.
  static absl::StatusOr<std::unique_ptr<CoordinatorServer>> Start(const ServerConfig& config);

  virtual ~CoordinatorServer() = default;

  // The address actually bound, "127.0.0.1:PORT" (the real port when 0 was asked for).
  virtual const std::string& address() const = 0;

  // Whether the port serves TLS.
  virtual bool tls() const = 0;

  // The dashboard's "host:port", empty when it is off.
  virtual const std::string& http_address() const = 0;

  // The metrics page's "host:port", empty when it is off.
  virtual const std::string& metrics_address() const = 0;

  // Stops accepting calls, lets in-flight calls finish, stops the lease sweeper and closes the
  // database. Idempotent; thread-safe; also run by the destructor of the implementation.
  virtual void Shutdown() = 0;

  // Blocks until Shutdown() has completed.
  virtual void Wait() = 0;
};

}  // namespace onset::coordinator
