#include "coordinator/server/read_only_server.h"

#include <grpcpp/server.h>
#include <grpcpp/server_builder.h>

#include <chrono>
#include <mutex>

#include "common/auth_token.h"
#include "common/clock.h"
#include "common/grpc_auth.h"
#include "common/listen_address.h"
#include "common/mutex.h"
#include "coordinator/dashboard/dashboard_api.h"
#include "coordinator/dashboard/dashboard_server.h"
#include "coordinator/rpc/study_service.h"
#include "coordinator/server/grpc_listener.h"
#include "coordinator/store/sqlite_store.h"

namespace onset::coordinator {
namespace {

class ReadOnlyServerImpl final : public ReadOnlyServer {
 public:
  ReadOnlyServerImpl(const ReadOnlyServerConfig& config, std::unique_ptr<SqliteStore> store)
      : token_(config.token),
        store_(std::move(store)),
        auth_(config.token),
        study_service_(store_.get(), &auth_, config.shared_checkpoints, config.checkpoint_root),
        dashboard_api_(store_.get(), store_.get(), config.token) {
    study_service_.EnableBackups(config.db_path);
  }

  ~ReadOnlyServerImpl() override { Shutdown(); }

  absl::Status Init(const std::string& http_listen) {
    // A loopback port rather than an in-process channel: gRPC 1.51 crashes creating calls on an
    // in-process channel with client interceptors, which carry the token.
    absl::StatusOr<GrpcListener> grpc =
        StartGrpcListener("127.0.0.1:0", std::nullopt, {&study_service_});
    if (!grpc.ok()) {
      return absl::UnavailableError("cannot serve the database on a loopback port: " +
                                    std::string(grpc.status().message()));
    }
    server_ = std::move(grpc->server);
    address_ = grpc->address;
    if (!http_listen.empty()) {
      absl::StatusOr<std::unique_ptr<DashboardServer>> http =
          DashboardServer::Start(http_listen, &dashboard_api_);
      if (!http.ok()) return http.status();
      dashboard_ = std::move(*http);
    }
    return absl::OkStatus();
  }

  std::shared_ptr<grpc::Channel> channel() override {
    common::MutexLock lock(&mu_);
    if (!channel_) {
      channel_ = common::NewClientChannel(address_, common::ClientSecurity{token_, ""});
    }
    return channel_;
  }

  const std::string& http_address() const override {
    static const std::string kNone;
    return dashboard_ ? dashboard_->address() : kNone;
  }

  void Shutdown() override {
    common::MutexLock lock(&mu_);
    if (stopped_) return;
    stopped_ = true;
    study_service_.StopStreams();
    if (dashboard_) dashboard_->Stop();
    if (server_) {
      server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5));
      server_->Wait();
    }
    channel_.reset();
    store_.reset();  // closes the database
  }

 private:
  const std::string token_;
  std::unique_ptr<SqliteStore> store_;
  const common::BearerTokenChecker auth_;
  StudyServiceImpl study_service_;
  DashboardApi dashboard_api_;
  std::unique_ptr<DashboardServer> dashboard_;
  std::unique_ptr<grpc::Server> server_;
  std::string address_;  // the gRPC port, "127.0.0.1:PORT"

  common::Mutex mu_;
  std::shared_ptr<grpc::Channel> channel_ ABSL_GUARDED_BY(mu_);
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace

absl::StatusOr<std::unique_ptr<ReadOnlyServer>> ReadOnlyServer::Start(
    const ReadOnlyServerConfig& config) {
  if (absl::Status s = common::ValidateToken(config.token); !s.ok()) {
    return absl::InvalidArgumentError("token: " + std::string(s.message()));
  }
  if (!config.http_listen.empty()) {
    const std::string host = common::HostOf(config.http_listen);
    if (host.empty()) {
      return absl::InvalidArgumentError("--http " + config.http_listen +
                                        ": must be host:port, e.g. 127.0.0.1:8080");
    }
    if (!common::IsLoopbackHost(host)) {
      return absl::InvalidArgumentError(
          "--http " + config.http_listen +
          ": the dashboard is plain HTTP, so the token would cross the network in clear text; "
          "keep it on loopback (e.g. 127.0.0.1:8080) and reach it from elsewhere through "
          "`ssh -L 8080:127.0.0.1:8080`");
    }
  }
  absl::StatusOr<std::unique_ptr<SqliteStore>> store =
      config.scratch ? SqliteStore::Open(":memory:", common::SystemClock())
                     : SqliteStore::OpenReadOnly(config.db_path, common::SystemClock());
  if (!store.ok()) return store.status();
  auto server = std::make_unique<ReadOnlyServerImpl>(config, std::move(*store));
  if (absl::Status s = server->Init(config.http_listen); !s.ok()) return s;
  return std::unique_ptr<ReadOnlyServer>(std::move(server));
}

}  // namespace onset::coordinator
