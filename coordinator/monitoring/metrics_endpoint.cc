#include "coordinator/monitoring/metrics_endpoint.h"

#include <optional>

#include "common/prometheus_text.h"
#include "coordinator/dashboard/http_access.h"

namespace onset::coordinator {
namespace {

HttpResponse Text(int status, std::string body) {
  return HttpResponse{status, "text/plain; charset=utf-8", std::move(body) + "\n"};
}

}  // namespace

HttpResponse MetricsEndpoint::Handle(const HttpRequest& request) {
  const std::string path = request.target.substr(0, request.target.find('?'));
  if (path != "/metrics") return Text(404, "no such page: " + path + " (metrics are at /metrics)");
  if (request.method != "GET") return Text(405, "only GET is served");
  if (std::optional<HttpRefusal> refused =
          CheckHttpToken(request.authorization, *tokens_, {"/metrics", common::Role::kRead})) {
    return Text(refused->status, refused->message);
  }
  common::MutexLock lock(&mu_);
  const auto now = clock_->MonotonicNow();
  if (!have_page_ || now - rendered_ >= min_interval_) {
    page_ = metrics_->Render();
    rendered_ = now;
    have_page_ = true;
  }
  return HttpResponse{200, common::kPrometheusContentType, page_};
}

}  // namespace onset::coordinator
