#include "coordinator/grid.h"

#include <limits>
#include <unordered_set>

#include "absl/status/status.h"
#include "common/sha256.h"

namespace onset::coordinator {
namespace {

struct AxisInfo {
  const char* grid_key;
  const char* section;
  const char* field;
  const char* path;
};

constexpr std::array<AxisInfo, kNumAxes> kAxisInfo = {{
    {"seeds", "train", "seed", "train.seed"},
    {"tokens", "train", "tokens", "train.tokens"},
    {"arch", "model", "arch", "model.arch"},
    {"window", "model", "window", "model.window"},
    {"pos", "model", "pos", "model.pos"},
}};

const AxisInfo& Info(Axis a) { return kAxisInfo[static_cast<int>(a)]; }

}  // namespace

const char* GridKey(Axis axis) { return Info(axis).grid_key; }
const char* FieldPath(Axis axis) { return Info(axis).path; }

std::optional<Axis> AxisForField(const std::string& path) {
  for (Axis a : kAllAxes) {
    if (path == Info(a).path) return a;
  }
  return std::nullopt;
}

int64_t GridAxes::Size() const {
  int64_t n = 1;
  for (const auto& v : values) {
    int64_t k = v.empty() ? 1 : static_cast<int64_t>(v.size());
    if (n > std::numeric_limits<int64_t>::max() / k) return std::numeric_limits<int64_t>::max();
    n *= k;
  }
  return n;
}

std::vector<GridPoint> CartesianProduct(const GridAxes& axes) {
  std::vector<GridPoint> points;
  GridPoint p;
  for (int i = 0; i < kNumAxes; ++i) p[i] = axes.values[i].empty() ? -1 : 0;
  while (true) {
    points.push_back(p);
    // Odometer increment, innermost (last) axis fastest.
    int i = kNumAxes - 1;
    for (; i >= 0; --i) {
      if (p[i] < 0) continue;
      if (++p[i] < static_cast<int>(axes.values[i].size())) break;
      p[i] = 0;
    }
    if (i < 0) return points;
  }
}

nlohmann::json CellJson(const nlohmann::json& base, const GridAxes& axes, const GridPoint& p) {
  nlohmann::json j = base.is_object() ? base : nlohmann::json::object();
  for (Axis a : kAllAxes) {
    int index = p[static_cast<int>(a)];
    if (index < 0) continue;
    nlohmann::json& section = j[Info(a).section];
    if (!section.is_object()) section = nlohmann::json::object();
    section[Info(a).field] = axes[a][index];
  }
  return j;
}

std::string CellId(const model::CellConfig& config) {
  return common::Sha256Hex(config.CanonicalText()).substr(0, 16);
}

CellSpec MakeCellSpec(const model::CellConfig& config) {
  CellSpec cell;
  cell.config_json = config.CanonicalText();
  cell.id = common::Sha256Hex(cell.config_json).substr(0, 16);
  cell.tokens_budget = config.train.tokens;
  cell.axes = {
      {"arch", config.model.arch},
      {"window", config.model.HasSliding() ? std::to_string(config.model.window) : "-"},
      {"pos", config.model.pos},
      {"tokens", std::to_string(config.train.tokens)},
      {"seed", std::to_string(config.train.seed)},
  };
  return cell;
}

absl::StatusOr<std::vector<CellSpec>> ExpandGrid(const nlohmann::json& base,
                                                 const GridAxes& axes,
                                                 const ErrorDescriber& describe) {
  if (axes.Size() > kMaxGridPoints) {
    return absl::InvalidArgumentError("grid: " + std::to_string(axes.Size()) +
                                      " points exceed the limit of " +
                                      std::to_string(kMaxGridPoints));
  }
  std::vector<CellSpec> cells;
  std::unordered_set<std::string> seen;
  for (const GridPoint& p : CartesianProduct(axes)) {
    model::CellConfig config;
    if (std::optional<model::FieldError> e = model::ParseCellConfig(CellJson(base, axes, p),
                                                                     &config)) {
      return absl::InvalidArgumentError(describe ? describe(*e, p) : e->ToString());
    }
    CellSpec cell = MakeCellSpec(config);
    if (seen.insert(cell.id).second) cells.push_back(std::move(cell));
  }
  return cells;
}

}  // namespace onset::coordinator
