#include "coordinator/coordinator_server.h"

#include <grpcpp/security/server_credentials.h>
#include <grpcpp/server.h>
#include <grpcpp/server_builder.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "common/clock.h"
#include "common/grpc_keepalive.h"
#include "coordinator/lease_manager.h"
#include "coordinator/sqlite_store.h"
#include "coordinator/study_service.h"
#include "coordinator/worker_service.h"

namespace onset::coordinator {
namespace {

// "host:port" -> host (brackets kept for IPv6, "[::1]"). Empty on a malformed address.
std::string HostOf(const std::string& listen) {
  size_t colon = listen.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == listen.size()) return "";
  for (size_t i = colon + 1; i < listen.size(); ++i) {
    if (listen[i] < '0' || listen[i] > '9') return "";
  }
  return listen.substr(0, colon);
}

// How often the sweeper looks for expired leases: a tenth of the TTL, within [10 ms, 1 s].
std::chrono::milliseconds SweepPeriod(std::chrono::milliseconds ttl) {
  return std::clamp(ttl / 10, std::chrono::milliseconds(10), std::chrono::milliseconds(1000));
}

class CoordinatorServerImpl final : public CoordinatorServer {
 public:
  CoordinatorServerImpl(const ServerConfig& config, std::unique_ptr<SqliteStore> store)
      : config_(config),
        store_(std::move(store)),
        leases_(store_.get(), &common::SystemClock(), config.lease_ttl),
        study_service_(store_.get()),
        worker_service_(store_.get(), &leases_, config.heartbeat_interval,
                        config.checkpoint_root) {}

  ~CoordinatorServerImpl() override { Shutdown(); }

  absl::Status Init() {
    if (absl::Status s = leases_.Recover(config_.requeue_running_on_start); !s.ok()) return s;
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort(config_.listen, grpc::InsecureServerCredentials(), &port);
    common::ApplyServerKeepalive(&builder);
    // gRPC sets SO_REUSEPORT by default: a second coordinator on the same port would bind
    // and silently share the traffic (and the workers) with the first.
    builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
    builder.RegisterService(&study_service_);
    builder.RegisterService(&worker_service_);
    server_ = builder.BuildAndStart();
    if (!server_ || port == 0) {
      if (server_) server_->Shutdown();
      server_.reset();
      return absl::UnavailableError("cannot listen on " + config_.listen +
                                    " (address in use or not local?)");
    }
    address_ = HostOf(config_.listen) + ":" + std::to_string(port);
    sweeper_ = std::thread([this] { Sweep(); });
    return absl::OkStatus();
  }

  const std::string& address() const override { return address_; }

  void Shutdown() override {
    std::unique_lock<std::mutex> lock(mu_);
    if (state_ != State::kRunning) {
      done_cv_.wait(lock, [this] { return state_ == State::kDone; });
      return;
    }
    state_ = State::kStopping;
    sweep_cv_.notify_all();
    lock.unlock();

    // In-flight calls finish; a short deadline bounds slow ones.
    if (server_) {
      server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5));
      server_->Wait();
    }
    if (sweeper_.joinable()) sweeper_.join();
    store_.reset();  // closes the database

    lock.lock();
    state_ = State::kDone;
    done_cv_.notify_all();
  }

  void Wait() override {
    std::unique_lock<std::mutex> lock(mu_);
    done_cv_.wait(lock, [this] { return state_ == State::kDone; });
  }

 private:
  enum class State { kRunning, kStopping, kDone };

  void Sweep() {
    const auto period = SweepPeriod(config_.lease_ttl);
    std::unique_lock<std::mutex> lock(mu_);
    while (state_ == State::kRunning) {
      sweep_cv_.wait_for(lock, period, [this] { return state_ != State::kRunning; });
      if (state_ != State::kRunning) break;
      lock.unlock();
      leases_.ExpireLeases();
      lock.lock();
    }
  }

  const ServerConfig config_;
  std::unique_ptr<SqliteStore> store_;
  LeaseManager leases_;
  StudyServiceImpl study_service_;
  WorkerServiceImpl worker_service_;
  std::unique_ptr<grpc::Server> server_;
  std::string address_;
  std::thread sweeper_;

  std::mutex mu_;
  State state_ = State::kRunning;  // guarded by mu_
  std::condition_variable sweep_cv_;
  std::condition_variable done_cv_;
};

}  // namespace

absl::Status ServerConfig::Validate() const {
  if (db_path.empty()) return absl::InvalidArgumentError("db_path: must not be empty");
  if (HostOf(listen).empty()) {
    return absl::InvalidArgumentError("listen: '" + listen +
                                      "' must be host:port, e.g. 127.0.0.1:7070 (port 0 picks "
                                      "a free port)");
  }
  if (lease_ttl.count() <= 0) return absl::InvalidArgumentError("lease_ttl: must be positive");
  if (heartbeat_interval.count() <= 0) {
    return absl::InvalidArgumentError("heartbeat_interval: must be positive");
  }
  if (lease_ttl <= heartbeat_interval) {
    return absl::InvalidArgumentError("lease_ttl: must exceed heartbeat_interval (" +
                                      std::to_string(lease_ttl.count()) +
                                      " ms <= " + std::to_string(heartbeat_interval.count()) +
                                      " ms)");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<CoordinatorServer>> CoordinatorServer::Start(
    const ServerConfig& config) {
  if (absl::Status s = config.Validate(); !s.ok()) return s;
  absl::StatusOr<std::unique_ptr<SqliteStore>> store =
      SqliteStore::Open(config.db_path, common::SystemClock(), config.retry);
  if (!store.ok()) return store.status();
  auto server = std::make_unique<CoordinatorServerImpl>(config, std::move(*store));
  if (absl::Status s = server->Init(); !s.ok()) return s;
  spdlog::info("coordinator serving {} (database {}, lease ttl {} ms)", server->address(),
               config.db_path, config.lease_ttl.count());
  return std::unique_ptr<CoordinatorServer>(std::move(server));
}

}  // namespace onset::coordinator
