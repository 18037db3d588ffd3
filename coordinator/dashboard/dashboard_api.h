// The dashboard's HTTP API as plain request -> response logic (no sockets: dashboard_server.h
// carries it over Boost.Beast). JSON everywhere, the same numbers as the CLI:
//
//   GET /                                       the page (static; holds no data)
//   GET /api/studies[?page_size=N&page_token=T]  the studies with their counts, the oldest
//                                               first, a page at a time (500 by default, at most
//                                               1000, within 3 MiB; next_page_token leads on)
//   GET /api/studies/NAME[?page_size=N&page_token=T]  the study and a page of its cells
//                                               (onset status; 2000 by default, at most 10000;
//                                               next_page_token leads on)
//   GET /api/studies/NAME/metrics               the names of the metrics its cells reported
//   GET /api/studies/NAME/curves?metric=M[&cells=ID,ID][&with=S2,S3]   points per cell
//   GET /api/studies/NAME/compare?metric=M&threshold=X[&by=A,B][&baseline=AXIS=VALUE]
//                                 [&direction=up|down][&x=tokens|flops][&level=0.95]
//                                 [&bootstrap=2000][&bootstrap_seed=1][&best_over=AXIS]
//                                 [&select=M:RULE][&select_on_seeds=0,1][&with=S2,S3]
//                                                             onset compare NAME S2 S3 --json
// ?with= pools those studies' cells with NAME's as `onset compare NAME S2 S3` does (the same
// experiment once, analysis/study_pool.h; the reply's "notes" say what was counted once).
//   GET /api/studies/NAME/heads/CELL[?tokens=N]  retrieval-head scores (onset heads --json)
//
// Every /api/ request needs "Authorization: Bearer TOKEN" with a token of role read or better
// (http_access.h; 401 without one, 403 for a worker token); the page asks for it once and keeps
// it in the browser's local storage. Nothing here changes anything: every request is a GET.
#pragma once

#include <memory>
#include <string>

#include "common/token_registry.h"
#include "coordinator/store/result_store.h"
#include "coordinator/store/study_store.h"

namespace onset::coordinator {

struct HttpRequest {
  std::string method;         // "GET", ...
  std::string target;         // path and query, e.g. "/api/studies/demo/curves?metric=x"
  std::string authorization;  // the Authorization header, empty when absent
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
};

// Thread-safe (stateless besides the store). The stores must outlive the API: `studies` for the
// studies and their cells, `results` for the metrics.
class DashboardApi {
 public:
  // Serves the tokens of `tokens` (which may change while serving) of role read or better.
  DashboardApi(StudyStore* studies, ResultStore* results,
               std::shared_ptr<const common::TokenRegistry> tokens)
      : studies_(studies), results_(results), tokens_(std::move(tokens)) {}
  // Serves the one token `token`, an admin's (a coordinator's token file).
  DashboardApi(StudyStore* studies, ResultStore* results, std::string_view token)
      : DashboardApi(studies, results, common::TokenRegistry::WithFileToken(token)) {}

  HttpResponse Handle(const HttpRequest& request) const;

 private:
  StudyStore* const studies_;
  ResultStore* const results_;
  const std::shared_ptr<const common::TokenRegistry> tokens_;
};

// The page, embedded at build time from coordinator/dashboard/index.html.
const std::string& DashboardPage();

}  // namespace onset::coordinator
