// GET /metrics over the coordinator's small HTTP server (dashboard_server.h): the page of
// CoordinatorMetrics to whoever presents the coordinator's token as "Authorization: Bearer
// TOKEN" (Prometheus: `authorization: {credentials_file: .../onsetd.token}` in the scrape
// config). Study names are the lab's data, so the page is not public.
//
// A page younger than `min_interval` is served again instead of read anew, so that a client
// asking in a loop costs the store one read per interval, however many ask.
//
// Thread-safety: Handle may be called from any thread, concurrently.
#pragma once

#include <chrono>
#include <string>

#include "common/mutex.h"
#include "coordinator/dashboard/dashboard_api.h"
#include "coordinator/monitoring/coordinator_metrics.h"

namespace onset::coordinator {

class MetricsEndpoint {
 public:
  // `metrics` and `clock` must outlive the endpoint.
  MetricsEndpoint(const CoordinatorMetrics* metrics, std::string token, const common::Clock* clock,
                  std::chrono::milliseconds min_interval = std::chrono::milliseconds(1000))
      : metrics_(metrics), token_(std::move(token)), clock_(clock), min_interval_(min_interval) {}

  // 200 with the page for GET /metrics with the token; 401 without it, 404 for another path,
  // 405 for another method.
  HttpResponse Handle(const HttpRequest& request) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  const CoordinatorMetrics* const metrics_;
  const std::string token_;
  const common::Clock* const clock_;
  const std::chrono::milliseconds min_interval_;

  common::Mutex mu_;  // held while a page is rendered: concurrent scrapes wait for that one
  std::string page_ ABSL_GUARDED_BY(mu_);
  common::Clock::MonotonicTime rendered_ ABSL_GUARDED_BY(mu_);
  bool have_page_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace onset::coordinator
