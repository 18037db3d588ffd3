// The standard gRPC health service (grpc.health.v1.Health) of a coordinator, kept honest: load
// balancers and Kubernetes probes ask it whether to send traffic, and a coordinator that cannot
// write its database cannot take a lease, a heartbeat or a metric point, however alive its
// process is. Every `interval` the monitor runs `probe` (SqliteStore::ProbeWrite: one row
// written through the store's writer, so a full disk, a lock another program holds or a
// read-only file fails it as it would fail a lease) and sets SERVING or NOT_SERVING for the
// server as a whole ("") and for each of `services`, logging each change with the probe's
// error. The first probe runs in the constructor, so the status is right from the start.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/health_check_service_interface.h>

#include "absl/status/status.h"
#include "common/mutex.h"

namespace onset::coordinator {

class HealthMonitor {
 public:
  using Probe = std::function<absl::Status()>;

  // `health` (not owned) must outlive the monitor or its Stop().
  HealthMonitor(Probe probe, grpc::HealthCheckServiceInterface* health,
                std::vector<std::string> services, std::chrono::milliseconds interval);
  ~HealthMonitor();
  HealthMonitor(const HealthMonitor&) = delete;
  HealthMonitor& operator=(const HealthMonitor&) = delete;

  // Stops probing (waits for a probe in progress); the status stays as it was. Idempotent.
  void Stop();

  // What the last probe found.
  bool serving() const;

 private:
  void Check();
  void Loop();

  const Probe probe_;
  grpc::HealthCheckServiceInterface* const health_;
  const std::vector<std::string> services_;
  const std::chrono::milliseconds interval_;

  mutable common::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool serving_ ABSL_GUARDED_BY(mu_) = false;
  bool reported_ ABSL_GUARDED_BY(mu_) = false;  // a status was set at least once
  std::condition_variable_any wake_;
  std::thread thread_;
};

}  // namespace onset::coordinator
