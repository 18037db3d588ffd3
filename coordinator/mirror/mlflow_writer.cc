#include "coordinator/mirror/mlflow_writer.h"

#include <cctype>
#include <cmath>
#include <vector>

#include "common/status_macros.h"
#include "common/tensorboard/cell_run.h"
#include "coordinator/mirror/mlflow_names.h"

namespace onset::coordinator {
namespace {

constexpr size_t kMetricsPerBatch = 1000;  // MLflow's MAX_METRICS_PER_BATCH
constexpr size_t kParamsPerBatch = 100;    // MAX_PARAMS_TAGS_PER_BATCH
constexpr char kApi[] = "/api/2.0/mlflow";
constexpr char kCellTag[] = "onset.cell_id";

// MLflow's JSON reads "NaN" for a double that is not a number; JSON itself has none.
nlohmann::json Value(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  return v;
}

// A query parameter's value: ids and names are sent percent-encoded.
std::string Encode(const std::string& text) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

bool Final(const std::string& status) { return status != "RUNNING"; }

}  // namespace

MlflowWriter::MlflowWriter(ResultStore* store, JsonHttp* http, const common::Clock* clock,
                           size_t max_cells)
    : store_(store), http_(http), clock_(clock), max_cells_(max_cells) {}

MlflowWriter::Run& MlflowWriter::RunOf(const std::string& study, const std::string& cell_id) {
  auto key = std::make_pair(study, cell_id);
  if (auto it = runs_.find(key); it != runs_.end()) return it->second;
  if (runs_.size() >= max_cells_ && !runs_.empty()) {
    auto oldest = runs_.begin();
    for (auto it = runs_.begin(); it != runs_.end(); ++it) {
      if (it->second.last_sync < oldest->second.last_sync) oldest = it;
    }
    runs_.erase(oldest);
  }
  return runs_[key];
}

absl::StatusOr<std::string> MlflowWriter::Experiment(const std::string& study) {
  if (auto it = experiments_.find(study); it != experiments_.end()) return it->second;
  const std::string get =
      std::string(kApi) + "/experiments/get-by-name?experiment_name=" + Encode(study);
  absl::StatusOr<nlohmann::json> found = http_->Call(get, nullptr);
  if (absl::IsNotFound(found.status())) {
    absl::StatusOr<nlohmann::json> made =
        http_->Call(std::string(kApi) + "/experiments/create", {{"name", study}});
    if (made.ok()) {
      const std::string id = made->value("experiment_id", "");
      if (id.empty()) return absl::FailedPreconditionError("experiments/create: no experiment_id");
      experiments_[study] = id;
      return id;
    }
    if (!absl::IsAlreadyExists(made.status())) return made.status();
    found = http_->Call(get, nullptr);  // made meanwhile by another client
  }
  if (!found.ok()) return found.status();
  const std::string id = (*found)["experiment"].value("experiment_id", "");
  if (id.empty()) return absl::FailedPreconditionError("experiments/get-by-name: no experiment_id");
  experiments_[study] = id;
  return id;
}

absl::Status MlflowWriter::FindOrCreateRun(const std::string& experiment, const std::string& study,
                                           const std::string& cell_id, const CellOutputs& cell,
                                           Run* run) {
  ONSET_ASSIGN_OR_RETURN(
      nlohmann::json found,
      http_->Call(std::string(kApi) + "/runs/search",
                  {{"experiment_ids", {experiment}},
                   {"filter", std::string("tags.`") + kCellTag + "` = '" + cell_id + "'"},
                   {"run_view_type", "ACTIVE_ONLY"},
                   {"max_results", 1}}));
  std::string id;
  if (found.contains("runs") && found["runs"].is_array() && !found["runs"].empty()) {
    const nlohmann::json& existing = found["runs"][0];
    id = existing["info"].value("run_id", "");
    run->status = existing["info"].value("status", "");
    // What MLflow holds: the latest step of each metric (the largest).
    if (existing.contains("data") && existing["data"].contains("metrics")) {
      for (const nlohmann::json& m : existing["data"]["metrics"]) {
        run->written[m.value("key", "")] = m.value("step", int64_t{0});
      }
    }
    if (existing.contains("data") && existing["data"].contains("tags")) {
      for (const nlohmann::json& t : existing["data"]["tags"]) {
        if (t.value("key", "") == "onset.state") run->state = t.value("value", "");
      }
    }
  } else {
    nlohmann::json tags = nlohmann::json::array();
    tags.push_back({{"key", "onset.study"}, {"value", study}});
    tags.push_back({{"key", kCellTag}, {"value", cell_id}});
    tags.push_back(
        {{"key", "mlflow.runName"}, {"value", tensorboard::RunDirectory(cell.cell.axes, cell_id)}});
    ONSET_ASSIGN_OR_RETURN(
        nlohmann::json made,
        http_->Call(std::string(kApi) + "/runs/create",
                    {{"experiment_id", experiment},
                     {"start_time", clock_->WallUnixMs()},
                     {"run_name", tensorboard::RunDirectory(cell.cell.axes, cell_id)},
                     {"tags", tags}}));
    id = made["run"]["info"].value("run_id", "");
    run->status = "RUNNING";
  }
  if (id.empty()) return absl::FailedPreconditionError("runs/search or runs/create: no run_id");
  // Params, also for a run found again: MLflow takes a param's same value again, so a run made
  // by a process that stopped before its params were sent gets them now.
  const std::vector<std::pair<std::string, std::string>> params =
      MlflowParams(cell.cell.axes, cell.config_json);
  for (size_t at = 0; at < params.size(); at += kParamsPerBatch) {
    nlohmann::json batch = nlohmann::json::array();
    for (size_t i = at; i < std::min(params.size(), at + kParamsPerBatch); ++i) {
      batch.push_back({{"key", params[i].first}, {"value", params[i].second}});
    }
    ONSET_RETURN_IF_ERROR(
        http_->Call(std::string(kApi) + "/runs/log-batch", {{"run_id", id}, {"params", batch}})
            .status());
  }
  run->id = id;
  return absl::OkStatus();
}

absl::Status MlflowWriter::Sync(const std::string& study, const std::string& cell_id) {
  ONSET_ASSIGN_OR_RETURN(CellOutputs described, store_->DescribeCell(study, cell_id));
  struct Point {
    std::string key;
    int64_t tokens;
    double value;
    int64_t at_unix_ms;
  };
  std::vector<Point> points;
  ONSET_RETURN_IF_ERROR(store_->ForEachMetricPoint(
      study, {}, {cell_id},
      [&](const std::string&, const std::string& metric, int64_t tokens, double value,
          int64_t at_unix_ms) {
        points.push_back(Point{MlflowName(metric), tokens, value, at_unix_ms});
        return true;
      }));
  Run& run = RunOf(study, cell_id);
  run.last_sync = ++syncs_;
  if (run.id.empty() && points.empty()) return absl::OkStatus();  // no run without a point
  if (run.id.empty()) {
    ONSET_ASSIGN_OR_RETURN(std::string experiment, Experiment(study));
    Run found;
    found.last_sync = run.last_sync;
    ONSET_RETURN_IF_ERROR(FindOrCreateRun(experiment, study, cell_id, described, &found));
    run = std::move(found);
  }

  // The points MLflow does not have yet, in batches; each accepted batch is remembered at once.
  std::vector<const Point*> fresh;
  for (const Point& p : points) {
    auto w = run.written.find(p.key);
    if (w == run.written.end() || p.tokens > w->second) fresh.push_back(&p);
  }
  for (size_t at = 0; at < fresh.size(); at += kMetricsPerBatch) {
    nlohmann::json batch = nlohmann::json::array();
    const size_t end = std::min(fresh.size(), at + kMetricsPerBatch);
    for (size_t i = at; i < end; ++i) {
      batch.push_back({{"key", fresh[i]->key},
                       {"value", Value(fresh[i]->value)},
                       {"timestamp", fresh[i]->at_unix_ms},
                       {"step", fresh[i]->tokens}});
    }
    ONSET_RETURN_IF_ERROR(
        http_->Call(std::string(kApi) + "/runs/log-batch", {{"run_id", run.id}, {"metrics", batch}})
            .status());
    for (size_t i = at; i < end; ++i) {
      int64_t& w = run.written[fresh[i]->key];
      w = std::max(w, fresh[i]->tokens);
    }
  }

  const std::string state = CellStateName(described.cell.state);
  if (state != run.state) {
    ONSET_RETURN_IF_ERROR(http_
                              ->Call(std::string(kApi) + "/runs/set-tag",
                                     {{"run_id", run.id}, {"key", "onset.state"}, {"value", state}})
                              .status());
    run.state = state;
  }
  const std::string status = MlflowRunStatus(described.cell.state);
  if (status != run.status) {
    nlohmann::json update = {{"run_id", run.id}, {"status", status}};
    if (Final(status)) update["end_time"] = clock_->WallUnixMs();
    ONSET_RETURN_IF_ERROR(http_->Call(std::string(kApi) + "/runs/update", update).status());
    run.status = status;
  }
  return absl::OkStatus();
}

}  // namespace onset::coordinator
