#include "model/config/wsd_trunk.h"

#include <algorithm>
#include <array>
#include <string_view>

#include "base/cell_id.h"

namespace onset::model {
namespace {

// Reads an increasing list of step boundaries in (0, until].
std::optional<FieldError> ReadPoints(const nlohmann::json& trunk, const char* key, int64_t until,
                                     int64_t step, std::vector<int64_t>* out) {
  const std::string path = std::string("trunk.") + key;
  if (!trunk.contains(key) || !trunk[key].is_array()) {
    return FieldError{path, "must be a list of token counts"};
  }
  const nlohmann::json& list = trunk[key];
  if (list.size() > kMaxTrunkPoints) {
    return FieldError{path, "has " + std::to_string(list.size()) + " entries; at most " +
                                std::to_string(kMaxTrunkPoints)};
  }
  out->clear();
  for (const nlohmann::json& v : list) {
    if (!v.is_number_integer()) return FieldError{path, "must hold integers, got " + v.dump()};
    const int64_t t = v.get<int64_t>();
    if (t <= 0 || t > until || t % step != 0) {
      return FieldError{path, std::to_string(t) + " is not a step boundary (a multiple of " +
                                  std::to_string(step) + ") in 1.." + std::to_string(until)};
    }
    if (!out->empty() && t <= out->back()) return FieldError{path, "must increase"};
    out->push_back(t);
  }
  return std::nullopt;
}

}  // namespace

int64_t TokensPerStep(const CellConfig& config) {
  const int64_t seq_len = std::max(1, config.model.seq_len);
  return std::max<int64_t>(1, config.train.batch_tokens / seq_len) * seq_len;
}

int64_t BranchPoint(const CellConfig& config) {
  const int64_t step = TokensPerStep(config);
  const int64_t start = std::max<int64_t>(0, config.train.wsd_decay_start());
  return start / step * step;
}

std::optional<std::vector<int64_t>> EvalStepEnds(const CellConfig& config, int64_t up_to,
                                                 size_t limit) {
  const int64_t step = TokensPerStep(config);
  const int64_t budget = config.train.tokens;
  std::vector<int64_t> ends;
  // As Trainer::Run: evaluate after the first step that reaches the next point, then look for
  // the first point beyond that step's end.
  int64_t point = config.eval.NextEvalAfter(0, budget);
  while (point <= up_to) {
    const int64_t end = (point + step - 1) / step * step;
    if (end > up_to) break;
    if (ends.size() == limit) return std::nullopt;
    ends.push_back(end);
    if (end >= budget) break;
    const int64_t next = config.eval.NextEvalAfter(end, budget);
    if (next <= end) break;
    point = next;
  }
  return ends;
}

const std::array<std::string_view, 10>& BudgetFields() {
  static constexpr std::array<std::string_view, 10> kFields = {"train.tokens",
                                                               "train.decay_fraction",
                                                               "train.decay_shape",
                                                               "train.min_lr_ratio",
                                                               "train.checkpoint_every_tokens",
                                                               "train.keep_checkpoints",
                                                               "train.keep_checkpoints_at",
                                                               "eval.every_tokens",
                                                               "eval.log_points",
                                                               "eval.log_start"};
  return kFields;
}

nlohmann::json StablePhaseJson(nlohmann::json canonical) {
  for (std::string_view path : BudgetFields()) {
    const size_t dot = path.find('.');
    const std::string section(path.substr(0, dot)), key(path.substr(dot + 1));
    if (canonical.contains(section) && canonical[section].is_object()) {
      canonical[section].erase(key);
    }
  }
  return canonical;
}

std::string TrunkIdOf(const CellConfig& config) {
  return base::CellIdOf("trunk:" + StablePhaseJson(config.ToJson()).dump());
}

std::string StablePhaseDifference(const CellConfig& a, const CellConfig& b) {
  const std::optional<JsonDifference> d =
      FirstDifference(StablePhaseJson(a.ToJson()), StablePhaseJson(b.ToJson()));
  return d ? d->path + ": " + d->a + " vs " + d->b : "";
}

nlohmann::json TrunkSpec::ToJson() const {
  return {{"trunk", {{"until", until}, {"eval_at", eval_at}, {"branch_points", branch_points}}},
          {"cell", cell.ToJson()}};
}

bool IsTrunkSpecJson(const nlohmann::json& j) { return j.is_object() && j.contains("trunk"); }

std::optional<FieldError> ParseTrunkSpec(const nlohmann::json& j, TrunkSpec* out) {
  if (!j.is_object()) return FieldError{"", "a trunk spec must be a JSON object"};
  for (const auto& [key, value] : j.items()) {
    if (key != "trunk" && key != "cell") return FieldError{key, "unknown key"};
  }
  if (!j.contains("cell")) return FieldError{"cell", "missing"};
  if (!j.contains("trunk") || !j["trunk"].is_object()) {
    return FieldError{"trunk", "must be an object"};
  }
  TrunkSpec spec;
  if (auto error = ParseCellConfig(j["cell"], &spec.cell)) {
    error->path = "cell." + error->path;
    return error;
  }
  if (spec.cell.train.schedule != "wsd") {
    return FieldError{"cell.train.schedule",
                      "a trunk trains a wsd schedule, not '" + spec.cell.train.schedule + "'"};
  }
  const nlohmann::json& trunk = j["trunk"];
  for (const auto& [key, value] : trunk.items()) {
    if (key != "until" && key != "eval_at" && key != "branch_points") {
      return FieldError{"trunk." + key, "unknown key"};
    }
  }
  const int64_t step = TokensPerStep(spec.cell);
  if (!trunk.contains("until") || !trunk["until"].is_number_integer()) {
    return FieldError{"trunk.until", "must be an integer token count"};
  }
  spec.until = trunk["until"].get<int64_t>();
  if (spec.until <= 0 || spec.until > kMaxTrainTokens || spec.until % step != 0) {
    return FieldError{"trunk.until", std::to_string(spec.until) +
                                         " is not a positive step boundary (a multiple of " +
                                         std::to_string(step) + ")"};
  }
  if (auto error = ReadPoints(trunk, "eval_at", spec.until, step, &spec.eval_at)) return error;
  if (auto error = ReadPoints(trunk, "branch_points", spec.until, step, &spec.branch_points)) {
    return error;
  }
  if (spec.branch_points.empty() || spec.branch_points.back() != spec.until) {
    return FieldError{"trunk.branch_points", "must end at trunk.until"};
  }
  *out = std::move(spec);
  return std::nullopt;
}

}  // namespace onset::model
