#include "coordinator/server/health_monitor.h"

#include <spdlog/spdlog.h>

#include <utility>

namespace onset::coordinator {

HealthMonitor::HealthMonitor(Probe probe, grpc::HealthCheckServiceInterface* health,
                             std::vector<std::string> services, std::chrono::milliseconds interval)
    : probe_(std::move(probe)),
      health_(health),
      services_(std::move(services)),
      interval_(interval) {
  Check();
  thread_ = std::thread([this] { Loop(); });
}

HealthMonitor::~HealthMonitor() { Stop(); }

void HealthMonitor::Stop() {
  {
    common::MutexLock lock(&mu_);
    stopping_ = true;
    wake_.notify_all();
  }
  if (thread_.joinable()) thread_.join();
}

bool HealthMonitor::serving() const {
  common::MutexLock lock(&mu_);
  return serving_;
}

void HealthMonitor::Check() {
  const absl::Status status = probe_();  // without mu_: it may wait out a busy timeout
  const bool serving = status.ok();
  common::MutexLock lock(&mu_);
  if (reported_ && serving == serving_) return;
  if (serving) {
    if (reported_) spdlog::info("health: the database can be written again: SERVING");
  } else {
    spdlog::error("health: the database cannot be written ({}): NOT_SERVING",
                  std::string(status.message()));
  }
  serving_ = serving;
  reported_ = true;
  if (health_ == nullptr) return;
  health_->SetServingStatus(serving);  // the server as a whole: service ""
  for (const std::string& service : services_) health_->SetServingStatus(service, serving);
}

void HealthMonitor::Loop() {
  while (true) {
    {
      common::MutexLock lock(&mu_);
      const auto deadline = std::chrono::steady_clock::now() + interval_;
      while (!stopping_ && wake_.wait_until(mu_, deadline) == std::cv_status::no_timeout) {
      }
      if (stopping_) return;
    }
    Check();
  }
}

}  // namespace onset::coordinator
