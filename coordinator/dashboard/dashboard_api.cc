#include "coordinator/dashboard/dashboard_api.h"

#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "analysis/compare_params.h"
#include "analysis/head_map.h"
#include "analysis/study_compare.h"
#include "base/metric_names.h"
#include "coordinator/dashboard/http_access.h"
#include "coordinator/dashboard/store_study_source.h"
#include "coordinator/rpc/proto_convert.h"
#include "coordinator/rpc/study_listing.h"

namespace onset::coordinator {
namespace {

HttpResponse Json(int status, const nlohmann::json& body) {
  return HttpResponse{status, "application/json", body.dump()};
}

HttpResponse Error(int status, const std::string& message) {
  return Json(status, {{"error", message}});
}

HttpResponse FromStatus(const absl::Status& s) {
  const int code = absl::IsNotFound(s) ? 404 : absl::IsInvalidArgument(s) ? 400 : 500;
  return Error(code, std::string(s.message()));
}

std::string Unescape(absl::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '+') {
      out += ' ';
    } else if (s[i] == '%' && i + 2 < s.size() &&
               std::isxdigit(static_cast<unsigned char>(s[i + 1])) &&
               std::isxdigit(static_cast<unsigned char>(s[i + 2]))) {
      out += static_cast<char>(std::strtol(std::string(s.substr(i + 1, 2)).c_str(), nullptr, 16));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

std::vector<std::string> List(const std::string& s) {
  std::vector<std::string> out;
  for (absl::string_view part : absl::StrSplit(s, ',', absl::SkipEmpty())) out.emplace_back(part);
  return out;
}

std::string ProtoJson(const google::protobuf::Message& m) {
  google::protobuf::util::JsonPrintOptions options;
  options.always_print_primitive_fields = true;
  options.preserve_proto_field_names = true;
  std::string json;
  (void)google::protobuf::util::MessageToJsonString(m, &json, options);
  return json;
}

using Query = std::map<std::string, std::string>;

// "a=1&b=x%20y" -> {a: 1, b: "x y"}; a key without '=' maps to "".
Query ParseQuery(absl::string_view text) {
  Query query;
  for (absl::string_view kv : absl::StrSplit(text, '&', absl::SkipEmpty())) {
    const size_t eq = kv.find('=');
    query[Unescape(kv.substr(0, eq))] =
        eq == absl::string_view::npos ? "" : Unescape(kv.substr(eq + 1));
  }
  return query;
}

// GET /api/studies: a page of studies at a time (?page_size=, ?page_token= as the reply's
// next_page_token), as ListStudies pages them (study_listing.h).
HttpResponse StudyList(StudyStore& store, Query& query) {
  int64_t size = 0;
  if (query.count("page_size") && !absl::SimpleAtoi(query["page_size"], &size)) size = -1;
  absl::StatusOr<v1::ListStudiesResponse> page = ListStudiesPage(
      store, static_cast<int32_t>(std::clamp<int64_t>(size, -1, kMaxStudiesPerPage + 1)),
      query["page_token"]);
  if (!page.ok()) return FromStatus(page.status());
  return HttpResponse{200, "application/json", ProtoJson(*page)};
}

// GET /api/studies/STUDY: a page of cells at a time (?page_size=, ?page_token= as the reply's
// next_page_token), so that no reply grows with the study.
HttpResponse StudyPage(StudyStore& store, const std::string& study, Query& query) {
  int64_t size = 0;
  if (query.count("page_size") && !absl::SimpleAtoi(query["page_size"], &size)) size = -1;
  absl::StatusOr<CellPage> page =
      ParsePage(static_cast<int32_t>(std::clamp<int64_t>(size, -1, kMaxPageCells + 1)),
                query["page_token"], static_cast<int>(kPageCells));
  if (!page.ok()) return FromStatus(page.status());
  absl::StatusOr<StudyDetail> detail = store.GetStudy(study, *page);
  if (!detail.ok()) return FromStatus(detail.status());
  v1::GetStudyResponse out;
  ToProto(detail->study, out.mutable_study());
  for (const CellInfo& cell : detail->cells) ToProto(cell, out.add_cells());
  out.set_next_page_token(PageToken(detail->next_after));
  return HttpResponse{200, "application/json", ProtoJson(out)};
}

// GET /api/studies/STUDY/heads/CELL: the cell's layer x head retrieval scores at the last eval
// point at or before ?tokens=.
HttpResponse HeadScores(ResultStore& store, const std::string& study, const std::string& cell,
                        Query& query) {
  const int64_t at = std::strtoll(query["tokens"].c_str(), nullptr, 10);
  absl::StatusOr<analysis::Curves> curves = StudyCurves(store, study, {}, {cell});
  if (!curves.ok()) return FromStatus(curves.status());
  const auto it = curves->find(cell);
  const analysis::HeadMap map = analysis::BuildHeadMap(
      it == curves->end() ? analysis::Curves::mapped_type{} : it->second, std::max<int64_t>(0, at));
  return HttpResponse{200, "application/json", analysis::HeadMapJson(map)};
}

// GET /api/studies/STUDY/metrics: name -> cells reporting it, aggregated in the store (the points
// are not read out), and the one to show first: the first NIAH accuracy, else the training loss,
// else the first ("" when there is none).
HttpResponse MetricList(ResultStore& store, const std::string& study) {
  absl::StatusOr<std::vector<std::pair<std::string, int>>> names = store.MetricNames(study);
  if (!names.ok()) return FromStatus(names.status());
  nlohmann::json out = nlohmann::json::array();
  std::vector<std::string> listed;
  for (const auto& [name, cells] : *names) {
    out.push_back({{"name", name}, {"cells", cells}});
    listed.push_back(name);
  }
  const std::string first = metric::HeadlineMetric(listed);
  return Json(200, {{"metrics", out}, {"first", first}});
}

// The studies a request reads: STUDY, then those ?with= names (pooled, analysis/study_pool.h).
std::vector<std::string> StudiesOf(const std::string& study, Query& query) {
  std::vector<std::string> names = {study};
  for (std::string& other : List(query["with"])) names.push_back(std::move(other));
  return names;
}

// GET /api/studies/STUDY/curves?metric=M[&cells=A,B][&with=S2,S3]: per cell, the points' tokens,
// values (null: not finite) and at_unix_ms (when each was measured; null: not known); with
// ?with=, the cells of those studies too (the same experiment once, as compare pools them).
HttpResponse MetricCurves(StudyStore& studies, ResultStore& store, const std::string& study,
                          const std::string& metric, Query& query) {
  analysis::CurveTimes times;
  absl::StatusOr<analysis::Curves> curves;
  const std::vector<std::string> names = StudiesOf(study, query);
  const std::vector<std::string> only = List(query["cells"]);
  if (names.size() == 1) {
    curves = StudyCurves(store, study, {metric}, only, &times);
  } else {
    StoreStudySource source(&studies, &store);
    absl::StatusOr<analysis::PooledStudies> pooled =
        analysis::PoolStudies(source, names, {metric}, /*with_times=*/true);
    if (!pooled.ok()) return FromStatus(pooled.status());
    curves = std::move(pooled->curves);
    times = std::move(pooled->times);
    if (!only.empty()) {
      analysis::Curves chosen;
      for (const std::string& id : only) {
        if (auto c = curves->find(id); c != curves->end()) chosen[id] = std::move(c->second);
      }
      curves = std::move(chosen);
    }
  }
  if (!curves.ok()) return FromStatus(curves.status());
  nlohmann::json out = nlohmann::json::array();
  for (const auto& [cell, by_metric] : *curves) {
    auto m = by_metric.find(metric);
    if (m == by_metric.end()) continue;
    nlohmann::json tokens = nlohmann::json::array(), values = nlohmann::json::array(),
                   at = nlohmann::json::array();
    const std::vector<int64_t>& cell_times = times[cell][metric];
    const std::vector<std::pair<int64_t, double>>& points = m->second;
    for (size_t i = 0; i < points.size(); ++i) {
      const auto& [t, v] = points[i];
      tokens.push_back(t);
      values.push_back(std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr));
      const int64_t ms = i < cell_times.size() ? cell_times[i] : 0;
      at.push_back(ms > 0 ? nlohmann::json(ms) : nlohmann::json(nullptr));
    }
    out.push_back({{"cell_id", cell}, {"tokens", tokens}, {"values", values}, {"at_unix_ms", at}});
  }
  return Json(200, {{"metric", metric}, {"curves", out}});
}

// GET /api/studies/STUDY/compare?metric=M&threshold=V[&direction=&x=&by=&baseline=&level=
// &bootstrap=&bootstrap_seed=&best_over=&select=&select_on_seeds=], the
// parameters parsed as `onset compare` parses its flags (analysis/compare_params.h).
HttpResponse CompareGroups(StudyStore& studies, ResultStore& results, const std::string& study,
                           const std::string& metric, Query& query) {
  const auto param = [&query](const char* name, const char* absent) {
    return query.count(name) ? query[name] : std::string(absent);
  };
  absl::StatusOr<analysis::CompareSpec> parsed = analysis::ParseCompareParams(
      {metric, query["threshold"], param("direction", "auto"), param("x", "tokens"), query["by"],
       query["baseline"], param("level", "0.95"), param("bootstrap", "2000"),
       param("bootstrap_seed", "1"), query["best_over"], query["select"], query["select_on_seeds"]},
      /*threshold_required=*/true);
  if (!parsed.ok()) return Error(400, std::string(parsed.status().message()));
  const analysis::CompareSpec& spec = *parsed;
  std::vector<std::string> metrics = {metric};
  for (const std::string& control : analysis::ControlMetrics(metric)) {
    metrics.push_back(control);  // shown beside the accuracy
  }
  if (!spec.best_over.axis.empty() && spec.best_over.metric != metric) {
    metrics.push_back(spec.best_over.metric);  // what chooses the nuisance axis's value
  }
  // One study, or several pooled (?with=): the same experiment counts once.
  StoreStudySource source(&studies, &results);
  absl::StatusOr<analysis::PooledStudies> pooled =
      analysis::PoolStudies(source, StudiesOf(study, query), metrics);
  if (!pooled.ok()) return FromStatus(pooled.status());
  std::string error;
  const analysis::CompareTable table =
      analysis::Compare(pooled->study, pooled->curves, spec, &error);
  if (!error.empty()) return Error(400, error);
  if (pooled->notes.empty()) {
    return HttpResponse{200, "application/json", analysis::CompareJson(table, spec)};
  }
  nlohmann::json out = nlohmann::json::parse(analysis::CompareJson(table, spec));
  out["notes"] = pooled->notes;
  return Json(200, out);
}

}  // namespace

HttpResponse DashboardApi::Handle(const HttpRequest& request) const {
  if (request.method != "GET") return Error(405, "only GET is served");
  const size_t q = request.target.find('?');
  const std::string path = request.target.substr(0, q);
  Query query = q == std::string::npos ? Query() : ParseQuery(request.target.substr(q + 1));
  if (path == "/" || path == "/index.html") {
    return HttpResponse{200, "text/html; charset=utf-8", DashboardPage()};
  }
  if (path.rfind("/api/", 0) != 0) return Error(404, "no such page: " + path);
  if (std::optional<HttpRefusal> refused = CheckHttpToken(
          request.authorization, *tokens_, {"the dashboard's API", common::Role::kRead})) {
    return Error(refused->status, refused->message);
  }

  std::vector<std::string> parts;
  for (absl::string_view p : absl::StrSplit(path.substr(5), '/', absl::SkipEmpty())) {
    parts.push_back(Unescape(p));
  }
  if (parts.size() == 1 && parts[0] == "studies") return StudyList(*studies_, query);
  if (parts.size() < 2 || parts[0] != "studies") return Error(404, "no such API: " + path);
  const std::string& study = parts[1];
  if (parts.size() == 2) return StudyPage(*studies_, study, query);
  if (parts.size() == 4 && parts[2] == "heads")
    return HeadScores(*results_, study, parts[3], query);
  if (parts.size() != 3) return Error(404, "no such API: " + path);
  if (parts[2] == "metrics") return MetricList(*results_, study);
  const std::string metric = query["metric"];
  if (metric.empty()) {
    return Error(400, "metric: required, e.g. ?metric=" + metric::AtLength(metric::kNiahAcc, 256));
  }
  if (parts[2] == "curves") return MetricCurves(*studies_, *results_, study, metric, query);
  if (parts[2] == "compare") return CompareGroups(*studies_, *results_, study, metric, query);
  return Error(404, "no such API: " + path);
}

}  // namespace onset::coordinator
