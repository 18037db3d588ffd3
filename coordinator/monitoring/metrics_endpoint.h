// GET /metrics over the coordinator's small HTTP server (dashboard_server.h): the page of
// CoordinatorMetrics to whoever presents a token of role read or better as "Authorization: Bearer
// TOKEN" (Prometheus: `authorization: {credentials_file: .../prometheus.token}` in the scrape
// config, a token made with `onset token create prometheus --role read`; http_access.h). Study
// names are the lab's data, so the page is not public.
//
// A page younger than `min_interval` is served again instead of read anew, so that a client
// asking in a loop costs the store one read per interval, however many ask.
//
// Thread-safety: Handle may be called from any thread, concurrently.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "common/mutex.h"
#include "common/token_registry.h"
#include "coordinator/dashboard/dashboard_api.h"
#include "coordinator/monitoring/coordinator_metrics.h"

namespace onset::coordinator {

class MetricsEndpoint {
 public:
  // `metrics` and `clock` must outlive the endpoint; `tokens` may change while it serves.
  MetricsEndpoint(const CoordinatorMetrics* metrics,
                  std::shared_ptr<const common::TokenRegistry> tokens, const common::Clock* clock,
                  std::chrono::milliseconds min_interval = std::chrono::milliseconds(1000))
      : metrics_(metrics), tokens_(std::move(tokens)), clock_(clock), min_interval_(min_interval) {}
  // For the one token `token`, an admin's (a coordinator's token file).
  MetricsEndpoint(const CoordinatorMetrics* metrics, std::string_view token,
                  const common::Clock* clock,
                  std::chrono::milliseconds min_interval = std::chrono::milliseconds(1000))
      : MetricsEndpoint(metrics, common::TokenRegistry::WithFileToken(token), clock, min_interval) {
  }

  // 200 with the page for GET /metrics with a token of role read or better; 401 without a token
  // the coordinator accepts, 403 for a worker token, 404 for another path, 405 for another
  // method.
  HttpResponse Handle(const HttpRequest& request) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  const CoordinatorMetrics* const metrics_;
  const std::shared_ptr<const common::TokenRegistry> tokens_;
  const common::Clock* const clock_;
  const std::chrono::milliseconds min_interval_;

  common::Mutex mu_;  // held while a page is rendered: concurrent scrapes wait for that one
  std::string page_ ABSL_GUARDED_BY(mu_);
  common::Clock::MonotonicTime rendered_ ABSL_GUARDED_BY(mu_);
  bool have_page_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace onset::coordinator
