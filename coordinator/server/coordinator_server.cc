#include "coordinator/server/coordinator_server.h"

#include <grpcpp/security/server_credentials.h>
#include <grpcpp/server.h>
#include <grpcpp/server_builder.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>

#include "base/durable_file.h"
#include "base/posix_io.h"
#include "common/auth_token.h"
#include "common/clock.h"
#include "common/grpc_auth.h"
#include "common/listen_address.h"
#include "common/log_throttle.h"
#include "common/mutex.h"
#include "common/tls_files.h"
#include "coordinator/access/credentials.h"
#include "coordinator/dashboard/dashboard_api.h"
#include "coordinator/dashboard/dashboard_server.h"
#include "coordinator/mirror/cell_sync_loop.h"
#include "coordinator/mirror/json_http.h"
#include "coordinator/mirror/mlflow_writer.h"
#include "coordinator/mirror/tensorboard_writer.h"
#include "coordinator/monitoring/coordinator_metrics.h"
#include "coordinator/monitoring/metrics_endpoint.h"
#include "coordinator/monitoring/rpc_metrics.h"
#include "coordinator/notify/event_detector.h"
#include "coordinator/notify/webhook_poster.h"
#include "coordinator/rpc/access_service.h"
#include "coordinator/rpc/study_service.h"
#include "coordinator/rpc/worker_service.h"
#include "coordinator/scheduling/lease_manager.h"
#include "coordinator/server/grpc_listener.h"
#include "coordinator/server/health_monitor.h"
#include "coordinator/store/sqlite_store.h"
#include "db/backup_destination.h"
#include "db/backup_rotation.h"
#include "db/database_lock.h"
#include "db/instance.h"
#include "db/startup_checks.h"
#include "onset/v1/onset.grpc.pb.h"

namespace onset::coordinator {
namespace {

// How often the sweeper looks for expired leases: a tenth of the TTL, within [10 ms, 1 s].
std::chrono::milliseconds SweepPeriod(std::chrono::milliseconds ttl) {
  return std::clamp(ttl / 10, std::chrono::milliseconds(10), std::chrono::milliseconds(1000));
}

// The services the gRPC listener serves (grpc_listener.h adds the health service), from their
// generated descriptors: the methods the metrics label.
std::vector<const google::protobuf::ServiceDescriptor*> ServedServices() {
  const google::protobuf::DescriptorPool* pool = google::protobuf::DescriptorPool::generated_pool();
  return {pool->FindServiceByName(v1::StudyService::service_full_name()),
          pool->FindServiceByName(v1::WorkerService::service_full_name()),
          pool->FindServiceByName(v1::AccessService::service_full_name()),
          &HealthServiceDescriptor()};
}

// The files besides the database's own that hold the coordinator's secrets, with what each is: a
// backup never replaces them (db/backup_destination.h).
std::vector<std::pair<std::string, std::string>> SecretFiles(const ServerConfig& config) {
  std::vector<std::pair<std::string, std::string>> files;
  if (!config.token_file.empty()) files.emplace_back(config.token_file, "the token file");
  if (!config.tls_key_file.empty()) files.emplace_back(config.tls_key_file, "the TLS key");
  if (!config.notify_url_file.empty()) {
    files.emplace_back(config.notify_url_file, "the webhook URL file");
  }
  return files;
}

class CoordinatorServerImpl final : public CoordinatorServer {
 public:
  CoordinatorServerImpl(const ServerConfig& config, std::unique_ptr<db::DatabaseLock> lock,
                        std::unique_ptr<SqliteStore> store)
      : config_(config),
        lock_(std::move(lock)),
        store_(std::move(store)),
        leases_(store_.get(), store_.get(), &common::SystemClock(), config.lease_ttl,
                config.stop_margin.value_or(config.heartbeat_interval)),
        tokens_(common::TokenRegistry::WithFileToken(config.token)),
        credentials_(store_.get(), tokens_),
        auth_(tokens_),
        study_service_(store_.get(), &auth_, !config.checkpoint_root.empty(),
                       config.checkpoint_root),
        worker_service_(store_.get(), store_.get(), &leases_, config.heartbeat_interval, &auth_,
                        config.checkpoint_root),
        access_service_(&credentials_, store_.get(), &auth_),
        dashboard_api_(store_.get(), store_.get(), tokens_),
        rpc_metrics_(ServedServices()),
        metrics_(MetricsSourcesOf(config)),
        metrics_endpoint_(&metrics_, tokens_, &common::SystemClock()) {
    study_service_.EnableBackups(config.db_path, SecretFiles(config));
    study_service_.SetStalledReaderLimit(config.stalled_reader_limit);
  }

  ~CoordinatorServerImpl() override { Shutdown(); }

  absl::Status Init(const std::optional<common::TlsKeyPair>& tls) {
    if (absl::Status s = leases_.Recover(config_.requeue_running_on_start, config_.trainer_gone);
        !s.ok()) {
      return s;
    }
    // The database's tokens, before the first call is checked.
    if (absl::Status s = credentials_.Load(); !s.ok()) return s;
    // The mirrors hear the lease manager from the first call on.
    if (!config_.tensorboard_dir.empty()) {
      try {
        base::MakeDirs(config_.tensorboard_dir);
      } catch (const std::runtime_error& e) {
        return absl::FailedPreconditionError(std::string("--tensorboard-dir: ") + e.what());
      }
      tensorboard_ = std::make_unique<TensorBoardWriter>(config_.tensorboard_dir, store_.get(),
                                                         &common::SystemClock());
      tensorboard_loop_ = std::make_unique<CellSyncLoop>("tensorboard", tensorboard_.get(),
                                                         &common::SystemClock(), config_.mirror);
      observers_.Add(tensorboard_loop_.get());
      spdlog::info("TensorBoard runs written to {} as points arrive", config_.tensorboard_dir);
    }
    if (!config_.mlflow_uri.empty()) {
      mlflow_http_ =
          NewCurlJsonHttp(config_.mlflow_uri, config_.mlflow_token, config_.mlflow_timeout);
      mlflow_ =
          std::make_unique<MlflowWriter>(store_.get(), mlflow_http_.get(), &common::SystemClock());
      mlflow_loop_ = std::make_unique<CellSyncLoop>("mlflow", mlflow_.get(), &common::SystemClock(),
                                                    config_.mirror);
      observers_.Add(mlflow_loop_.get());
      spdlog::info("MLflow runs mirrored to {} as points arrive", config_.mlflow_uri);
    }
    if (!observers_.empty()) leases_.set_observer(&observers_);
    if (tensorboard_loop_) tensorboard_loop_->Start();
    if (mlflow_loop_) mlflow_loop_->Start();
    std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>>
        interceptors;
    interceptors.push_back(NewRpcMetricsInterceptorFactory(&rpc_metrics_));
    absl::StatusOr<GrpcListener> grpc = StartGrpcListener(
        config_.listen, tls, {&study_service_, &worker_service_, &access_service_},
        std::move(interceptors));
    if (!grpc.ok()) return grpc.status();
    server_ = std::move(grpc->server);
    address_ = grpc->address;
    health_ = std::make_unique<HealthMonitor>(
        [this] { return store_->ProbeWrite(); }, server_->GetHealthCheckService(),
        std::vector<std::string>{v1::StudyService::service_full_name(),
                                 v1::WorkerService::service_full_name(),
                                 v1::AccessService::service_full_name()},
        config_.health_interval);
    // Before the metrics page, which reads notifier_.
    if (!config_.notify_urls.empty()) {
      poster_ = NewCurlPoster();
      notifier_ = std::make_unique<Notifier>(config_.notify_urls, poster_.get(),
                                             &common::SystemClock(), config_.notify);
      detector_ = std::make_unique<EventDetector>(store_.get(), store_.get(), store_.get(),
                                                  &common::SystemClock(), kWorkerLiveWindow);
      // A detector that cannot read the store now starts at the next poll instead: events
      // written before then are not announced, as for events before any start.
      detector_started_ = detector_->Start();
      if (const absl::Status& s = detector_started_; !s.ok()) {
        spdlog::warn("notifications: cannot read the event log yet ({}); retrying",
                     std::string(s.message()));
      }
      notify_ = std::thread([this] { Notify(); });
      spdlog::info("notifications to {} URL(s)", config_.notify_urls.size());
    }
    if (!config_.http_listen.empty()) {
      absl::StatusOr<std::unique_ptr<DashboardServer>> http =
          DashboardServer::Start(config_.http_listen, &dashboard_api_);
      if (!http.ok()) {
        server_->Shutdown();
        server_.reset();
        return http.status();
      }
      dashboard_ = std::move(*http);
      spdlog::info("dashboard on http://{}/", dashboard_->address());
    }
    if (!config_.metrics_listen.empty()) {
      absl::StatusOr<std::unique_ptr<DashboardServer>> http = DashboardServer::Start(
          config_.metrics_listen,
          [this](const HttpRequest& request) { return metrics_endpoint_.Handle(request); });
      if (!http.ok()) {
        if (dashboard_) dashboard_->Stop();
        server_->Shutdown();
        server_.reset();
        return http.status();
      }
      metrics_http_ = std::move(*http);
      spdlog::info("metrics on http://{}/metrics", metrics_http_->address());
    }
    sweeper_ = std::thread([this] { Sweep(); });
    if (config_.backup_every.count() > 0) backups_ = std::thread([this] { Backups(); });
    return absl::OkStatus();
  }

  const std::string& http_address() const override {
    static const std::string kNone;
    return dashboard_ ? dashboard_->address() : kNone;
  }

  const std::string& metrics_address() const override {
    static const std::string kNone;
    return metrics_http_ ? metrics_http_->address() : kNone;
  }

  const std::string& address() const override { return address_; }
  bool tls() const override { return !config_.tls_cert_file.empty(); }

  void Shutdown() override {
    {
      common::MutexLock lock(&mu_);
      if (state_ != State::kRunning) {
        while (state_ != State::kDone) done_cv_.wait(mu_);
        return;
      }
      state_ = State::kStopping;
      sweep_cv_.notify_all();
    }

    // In-flight calls finish; a short deadline bounds slow ones. Watches and long polls would
    // otherwise run until their clients hang up.
    study_service_.StopStreams();
    if (health_)
      health_->Stop();  // before the store closes; the server's shutdown says
                        // NOT_SERVING to every watcher
    if (dashboard_) dashboard_->Stop();
    if (metrics_http_) metrics_http_->Stop();
    if (server_) {
      server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5));
      server_->Wait();
    }
    if (sweeper_.joinable()) sweeper_.join();
    if (backups_.joinable()) backups_.join();
    if (notify_.joinable()) notify_.join();
    if (notifier_) notifier_->Stop();  // a POST in flight ends within its timeout
    // No call reports points any more: the mirror writes what it was told, then stops.
    if (tensorboard_loop_) tensorboard_loop_->Stop();
    if (mlflow_loop_) mlflow_loop_->Stop();  // each call bounded by mlflow_timeout
    store_.reset();                          // closes the database
    lock_.reset();                           // and lets another coordinator have it

    common::MutexLock lock(&mu_);
    state_ = State::kDone;
    done_cv_.notify_all();
  }

  void Wait() override {
    common::MutexLock lock(&mu_);
    while (state_ != State::kDone) done_cv_.wait(mu_);
  }

 private:
  enum class State { kRunning, kStopping, kDone };

  // What the metrics page reads; called in the constructor, after the members it names.
  MetricsSources MetricsSourcesOf(const ServerConfig& config) {
    MetricsSources sources;
    sources.studies = store_.get();
    sources.workers = store_.get();
    sources.open_leases = [this] { return static_cast<int64_t>(leases_.ActiveLeases()); };
    sources.expired_leases = [this] { return leases_.ExpiredLeases(); };
    sources.writer = [this] { return store_->WriterStats(); };
    sources.rpcs = &rpc_metrics_;
    if (!config.notify_urls.empty()) {
      sources.notifications = [this] {
        NotificationCounts counts;
        if (!notifier_) return counts;
        const Notifier::Stats s = notifier_->stats();
        counts.sent = s.sent;
        counts.failed_attempts = s.failed_attempts;
        counts.dropped = s.dropped;
        counts.queued = s.queued;
        return counts;
      };
    }
    sources.db_path = config.db_path;
    sources.clock = &common::SystemClock();
    sources.live_window = kWorkerLiveWindow;
    sources.max_studies = config.metrics_max_studies;
    sources.version = ONSET_VERSION;
    return sources;
  }

  void Sweep() {
    const auto period = SweepPeriod(config_.lease_ttl);
    while (true) {
      {
        common::MutexLock lock(&mu_);
        const auto deadline = std::chrono::steady_clock::now() + period;
        while (state_ == State::kRunning &&
               sweep_cv_.wait_until(mu_, deadline) == std::cv_status::no_timeout) {
        }
        if (state_ != State::kRunning) return;
      }
      leases_.ExpireLeases();  // without mu_: it writes to the store
    }
  }

  // Notifications: the event detector polls the store whenever it changes, and every
  // kNotifyPoll at least (a worker going stale is time passing, not a write); what it finds is
  // handed to the notifier's queues, which never block this thread.
  void Notify() {
    static constexpr int64_t kNotifyPollMs = 2000;
    bool started = detector_started_.ok();
    int64_t seen = store_->ChangeVersion();
    common::LogThrottle failures(common::SystemClock(), std::chrono::minutes(1));
    while (true) {
      {
        common::MutexLock lock(&mu_);
        if (state_ != State::kRunning) return;
      }
      // Bounded, so that Shutdown is noticed within one poll.
      seen = store_->WaitForChange(seen, kNotifyPollMs);
      {
        common::MutexLock lock(&mu_);
        if (state_ != State::kRunning) return;
      }
      absl::Status status;
      if (!started) {
        status = detector_->Start();
        started = status.ok();
      }
      if (status.ok()) {
        absl::StatusOr<std::vector<Notification>> found = detector_->Poll();
        if (found.ok()) {
          for (const Notification& n : *found) notifier_->Publish(n);
          if (failures.Recovered()) spdlog::info("notifications: the store can be read again");
        } else {
          status = found.status();
        }
      }
      int64_t left_out = 0;
      if (!status.ok() && failures.Occurred(1, &left_out)) {
        spdlog::warn("notifications: cannot read the store ({}); trying again", status.ToString());
      }
    }
  }

  // Every backup_every: a rotating backup into backup_dir (db/backup_rotation.h), logged.
  void Backups() {
    const std::vector<std::pair<std::string, std::string>> others = SecretFiles(config_);
    while (true) {
      {
        common::MutexLock lock(&mu_);
        const auto deadline = std::chrono::steady_clock::now() + config_.backup_every;
        while (state_ == State::kRunning &&
               sweep_cv_.wait_until(mu_, deadline) == std::cv_status::no_timeout) {
        }
        if (state_ != State::kRunning) return;
      }
      const auto started = std::chrono::steady_clock::now();
      db::BackupFileOptions options;
      options.held = db::HeldFiles(config_.db_path, others);
      options.reserve_bytes = config_.backup_reserve_bytes;
      absl::StatusOr<db::RotationResult> rotated = db::RotateBackup(
          config_.db_path, config_.backup_dir, config_.backup_keep,
          common::SystemClock().WallUnixMs(),
          "onsetd on " + base::HostName("an unnamed host") + " serving " + config_.db_path, options,
          *store_);
      const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::steady_clock::now() - started)
                          .count();
      if (!rotated.ok()) {
        spdlog::error("backup into {} failed: {}", config_.backup_dir,
                      std::string(rotated.status().message()));
        continue;
      }
      spdlog::info("backup: {} ({} bytes) in {} ms (keeping the newest {})", rotated->path,
                   rotated->bytes, ms, config_.backup_keep);
      for (const std::string& deleted : rotated->deleted) {
        spdlog::info("backup: deleted {}, the oldest beyond --backup-keep", deleted);
      }
      for (const std::string& spared : rotated->spared) spdlog::warn("backup: {}", spared);
    }
  }

  const ServerConfig config_;
  std::unique_ptr<db::DatabaseLock> lock_;  // null for an in-memory database
  std::unique_ptr<SqliteStore> store_;
  LeaseManager leases_;
  // The tokens calls are checked against: the token file's, the database's (credentials_ loads
  // and changes them).
  const std::shared_ptr<common::TokenRegistry> tokens_;
  Credentials credentials_;
  const common::BearerTokenChecker auth_;
  StudyServiceImpl study_service_;
  WorkerServiceImpl worker_service_;
  AccessServiceImpl access_service_;
  DashboardApi dashboard_api_;
  RpcMetrics rpc_metrics_;
  CoordinatorMetrics metrics_;
  MetricsEndpoint metrics_endpoint_;
  std::unique_ptr<DashboardServer> dashboard_;
  std::unique_ptr<DashboardServer> metrics_http_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<HealthMonitor> health_;
  std::string address_;
  std::thread sweeper_;
  std::thread backups_;
  // Notifications, when notify_urls are given: the POSTs, their queues, what is worth telling.
  std::unique_ptr<WebhookPoster> poster_;
  std::unique_ptr<Notifier> notifier_;
  std::unique_ptr<EventDetector> detector_;  // used by notify_ only, after Init
  absl::Status detector_started_;            // its first Start, in Init
  std::thread notify_;
  // The TensorBoard directory written as points arrive, when tensorboard_dir is given.
  std::unique_ptr<TensorBoardWriter> tensorboard_;
  std::unique_ptr<CellSyncLoop> tensorboard_loop_;
  // The MLflow runs, when mlflow_uri is given.
  std::unique_ptr<JsonHttp> mlflow_http_;
  std::unique_ptr<MlflowWriter> mlflow_;
  std::unique_ptr<CellSyncLoop> mlflow_loop_;
  LeaseObservers observers_;  // the loops above, as the lease manager's observer

  common::Mutex mu_;
  State state_ ABSL_GUARDED_BY(mu_) = State::kRunning;
  std::condition_variable_any sweep_cv_;
  std::condition_variable_any done_cv_;
};

// Before serving a database file: a backup's copy served for the first time starts a new
// generation (InstanceStore::StartServing), whose claims wait until every worker of the lost
// timeline has stopped its trainer: it stops it before its own view of its lease runs out, at most
// lease_ttl after its last heartbeat, which was before this start; the stop margin covers its
// last step. The generation mark beside the file outlives the file a later restore replaces.
absl::Status StartGeneration(const ServerConfig& config, SqliteStore& store) {
  const std::chrono::milliseconds wait =
      config.lease_ttl + config.stop_margin.value_or(config.heartbeat_interval);
  const int64_t mark = db::ReadGenerationMark(config.db_path);
  absl::StatusOr<ServingStart> start = store.StartServing(mark, wait.count());
  if (!start.ok()) return start.status();
  const db::InstanceInfo& now = start->instance;
  if (start->restored) {
    spdlog::warn(
        "database {} is a backup served for the first time: a restore. Generation {} begins "
        "(the backup was taken at unix ms {} by {}); {} attempt(s) it held open were handed "
        "back, attempts are numbered from {} on, and no cell is claimed for {} ms, until the "
        "workers of the lost timeline have stopped",
        config.db_path, now.generation, now.restored_from.taken_unix_ms, now.restored_from.source,
        start->handed_back, db::AttemptFloor(now.generation) + 1, wait.count());
  } else if (now.claims_from_unix_ms > common::SystemClock().WallUnixMs()) {
    spdlog::info("claims stay closed until unix ms {} (a restore's wait is not over)",
                 now.claims_from_unix_ms);
  }
  if (mark < now.generation) {
    if (absl::Status s = db::WriteGenerationMark(config.db_path, now.generation); !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ServerConfig::Validate() const {
  if (db_path.empty()) return absl::InvalidArgumentError("db_path: must not be empty");
  if (!mlflow_uri.empty()) {
    if (absl::Status s = CheckBaseUrl(mlflow_uri); !s.ok()) {
      return absl::InvalidArgumentError("mlflow_uri: " + std::string(s.message()));
    }
  }
  if (common::HostOf(listen).empty()) {
    return absl::InvalidArgumentError("listen: '" + listen +
                                      "' must be host:port, e.g. 127.0.0.1:7070 (port 0 picks "
                                      "a free port)");
  }
  if (absl::Status s = common::ValidateToken(token); !s.ok()) {
    return absl::InvalidArgumentError("token: " + std::string(s.message()));
  }
  if (token.size() < common::kMinTokenLength) {
    return absl::InvalidArgumentError("token: must have at least " +
                                      std::to_string(common::kMinTokenLength) + " characters");
  }
  if (tls_cert_file.empty() != tls_key_file.empty()) {
    return absl::InvalidArgumentError(tls_cert_file.empty()
                                          ? "tls_cert_file: must be given with tls_key_file"
                                          : "tls_key_file: must be given with tls_cert_file");
  }
  if (tls_cert_file.empty() && !allow_insecure_remote &&
      !common::IsLoopbackHost(common::HostOf(listen))) {
    return absl::InvalidArgumentError(
        "listen: " + listen +
        " is reachable from other machines and TLS is off, so the token would cross the network "
        "in clear text: serve TLS (--tls-cert, --tls-key) or allow it (--insecure) on a network "
        "you trust");
  }
  if (!http_listen.empty()) {
    if (common::HostOf(http_listen).empty()) {
      return absl::InvalidArgumentError("http_listen: '" + http_listen +
                                        "' must be host:port, e.g. 127.0.0.1:8080");
    }
    if (!allow_insecure_remote && !common::IsLoopbackHost(common::HostOf(http_listen))) {
      return absl::InvalidArgumentError(
          "http_listen: " + http_listen +
          " is reachable from other machines and the dashboard is plain HTTP, so the token "
          "would cross the network in clear text: keep it on loopback (and reach it through an "
          "SSH tunnel) or allow it (--insecure) on a network you trust");
    }
  }
  if (!metrics_listen.empty()) {
    if (common::HostOf(metrics_listen).empty()) {
      return absl::InvalidArgumentError("metrics_listen: '" + metrics_listen +
                                        "' must be host:port, e.g. 127.0.0.1:9464");
    }
    if (!allow_insecure_remote && !common::IsLoopbackHost(common::HostOf(metrics_listen))) {
      return absl::InvalidArgumentError(
          "metrics_listen: " + metrics_listen +
          " is reachable from other machines and the metrics page is plain HTTP, so the token "
          "would cross the network in clear text: keep it on loopback (run Prometheus or an "
          "agent on this machine) or allow it (--insecure) on a network you trust");
    }
  }
  for (const std::string& url : notify_urls) {
    if (absl::Status s = CheckWebhookUrl(url); !s.ok()) {
      return absl::InvalidArgumentError("notify_urls: " + std::string(s.message()));
    }
  }
  if (metrics_max_studies < 0) {
    return absl::InvalidArgumentError("metrics_max_studies: must not be negative");
  }
  if (lease_ttl.count() <= 0) return absl::InvalidArgumentError("lease_ttl: must be positive");
  if (heartbeat_interval.count() <= 0) {
    return absl::InvalidArgumentError("heartbeat_interval: must be positive");
  }
  if (lease_ttl <= heartbeat_interval) {
    return absl::InvalidArgumentError(
        "lease_ttl: must exceed heartbeat_interval (" + std::to_string(lease_ttl.count()) +
        " ms <= " + std::to_string(heartbeat_interval.count()) + " ms)");
  }
  if (backup_every.count() < 0)
    return absl::InvalidArgumentError("backup_every: must not be negative");
  if (backup_every.count() > 0 && backup_dir.empty()) {
    return absl::InvalidArgumentError("backup_dir: name the directory for the backups");
  }
  if (backup_keep < 1) return absl::InvalidArgumentError("backup_keep: must be at least 1");
  if (stalled_reader_limit.count() <= 0) {
    return absl::InvalidArgumentError("stalled_reader_limit: must be positive");
  }
  if (backup_reserve_bytes < 0) {
    return absl::InvalidArgumentError("backup_reserve_bytes: must not be negative");
  }
  if (health_interval.count() <= 0) {
    return absl::InvalidArgumentError("health_interval: must be positive");
  }
  if (stop_margin && stop_margin->count() < 0) {
    return absl::InvalidArgumentError("stop_margin: must not be negative");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<CoordinatorServer>> CoordinatorServer::Start(
    const ServerConfig& config) {
  if (absl::Status s = config.Validate(); !s.ok()) return s;
  std::optional<common::TlsKeyPair> tls;
  if (!config.tls_cert_file.empty()) {
    absl::StatusOr<common::TlsKeyPair> pair =
        common::ReadTlsKeyPair(config.tls_cert_file, config.tls_key_file);
    if (!pair.ok()) return pair.status();
    tls = std::move(*pair);
  }
  std::unique_ptr<db::DatabaseLock> lock;
  if (config.db_path != ":memory:" && config.db_path.find("mode=memory") == std::string::npos) {
    absl::StatusOr<std::unique_ptr<db::DatabaseLock>> locked =
        db::DatabaseLock::Acquire(config.db_path);
    if (!locked.ok()) return locked.status();
    lock = std::move(*locked);
    db::StartupCheckOptions checks;
    checks.allow_empty_file = config.init_empty_db;
    checks.quick_check = !config.skip_quick_check;
    if (absl::Status s = db::CheckDatabaseForServing(config.db_path, checks); !s.ok()) return s;
  }
  absl::StatusOr<std::unique_ptr<SqliteStore>> store =
      SqliteStore::Open(config.db_path, common::SystemClock(), config.retry);
  if (!store.ok()) return store.status();
  if (lock) {
    if (absl::Status s = StartGeneration(config, **store); !s.ok()) return s;
  }
  auto server = std::make_unique<CoordinatorServerImpl>(config, std::move(lock), std::move(*store));
  if (absl::Status s = server->Init(tls); !s.ok()) return s;
  spdlog::info("coordinator serving {} ({}, database {}, lease ttl {} ms)", server->address(),
               tls ? "TLS" : "plaintext", config.db_path, config.lease_ttl.count());
  return std::unique_ptr<CoordinatorServer>(std::move(server));
}

}  // namespace onset::coordinator
