#include "coordinator/study/grid.h"

#include <algorithm>
#include <limits>
#include <unordered_map>

#include "absl/status/status.h"
#include "base/cell_id.h"
#include "model/config/flops.h"

namespace onset::coordinator {
namespace {

using nlohmann::json;

// "model.arch" -> ("model", "arch").
std::pair<std::string, std::string> SplitPath(const std::string& path) {
  const size_t dot = path.find('.');
  if (dot == std::string::npos) return {path, ""};
  return {path.substr(0, dot), path.substr(dot + 1)};
}

void Place(json* cell, const std::string& path, const json& value) {
  auto [section, key] = SplitPath(path);
  json& s = (*cell)[section];
  if (!s.is_object()) s = json::object();
  s[key] = value;
}

std::optional<int64_t> AsTokenCount(const json& v) {
  if (v.is_number_integer()) return v.get<int64_t>();
  if (v.is_string()) return model::ParseTokenCount(v.get<std::string>());
  return std::nullopt;
}

// The value at a dotted path of a cell JSON object; null when absent.
const json* At(const json& cell, const std::string& path) {
  auto [section, key] = SplitPath(path);
  auto s = cell.find(section);
  if (s == cell.end() || !s->is_object()) return nullptr;
  auto it = s->find(key);
  return it == s->end() ? nullptr : &*it;
}

// Records in cell->axis_aliases the values `point` (a grid point's cell JSON, as validated)
// gives the display fields `paths` where the cell's canonical config holds another value.
void RecordAliases(const json& point, const json& canonical, const std::vector<std::string>& paths,
                   CellSpec* cell) {
  for (const std::string& path : paths) {
    const json* given = At(point, path);
    const json* kept = At(canonical, path);
    if (!given || !kept || SameValue(*given, *kept)) continue;
    const NamedAxis* named = FindNamedAxis(path);
    const std::string axis = named ? named->display : path;
    const std::string value = DisplayValue(*given);
    if (auto own = cell->axes.find(axis); own != cell->axes.end() && own->second == value) continue;
    std::vector<std::string>& values = cell->axis_aliases[axis];
    if (std::find(values.begin(), values.end(), value) == values.end()) values.push_back(value);
  }
}

}  // namespace

const NamedAxis* FindNamedAxis(const std::string& key_or_path) {
  for (const NamedAxis& a : kNamedAxes) {
    if (key_or_path == a.key || key_or_path == a.path) return &a;
  }
  return nullptr;
}

bool SameValue(const json& a, const json& b) {
  if (a == b) return true;
  if (!a.is_string() && !b.is_string()) return false;
  std::optional<int64_t> x = AsTokenCount(a);
  std::optional<int64_t> y = AsTokenCount(b);
  return x && y && *x == *y;
}

int64_t Grid::Size() const {
  int64_t n = 1;
  for (const GridAxis& axis : axes) {
    const int64_t k = static_cast<int64_t>(axis.values.size());
    if (k == 0) return 0;
    if (n > std::numeric_limits<int64_t>::max() / k) return std::numeric_limits<int64_t>::max();
    n *= k;
  }
  return n;
}

std::optional<std::pair<int, int>> Grid::Find(const std::string& path) const {
  for (size_t a = 0; a < axes.size(); ++a) {
    for (size_t k = 0; k < axes[a].paths.size(); ++k) {
      if (axes[a].paths[k] == path) return std::make_pair(static_cast<int>(a), static_cast<int>(k));
    }
  }
  return std::nullopt;
}

std::vector<GridPoint> CartesianProduct(const Grid& grid) {
  std::vector<GridPoint> points;
  GridPoint p(grid.axes.size(), 0);
  for (const GridAxis& axis : grid.axes) {
    if (axis.values.empty()) return points;  // an empty axis leaves no point
  }
  while (true) {
    points.push_back(p);
    // Odometer increment, innermost (last) axis fastest.
    int i = static_cast<int>(p.size()) - 1;
    for (; i >= 0; --i) {
      if (++p[i] < static_cast<int>(grid.axes[i].values.size())) break;
      p[i] = 0;
    }
    if (i < 0) return points;
  }
}

const json* AxisValue(const Grid& grid, const GridPoint& p, const std::string& path) {
  std::optional<std::pair<int, int>> at = grid.Find(path);
  if (!at) return nullptr;
  return &grid.axes[at->first].values[p[at->first]][at->second];
}

bool RuleMatches(const Grid& grid, size_t rule, const GridPoint& p) {
  const ExcludeRule& r = grid.exclude[rule];
  if (r.fields.empty()) return false;
  for (const auto& [path, values] : r.fields) {
    const json* v = AxisValue(grid, p, path);
    if (!v || std::none_of(values.begin(), values.end(),
                           [v](const json& x) { return SameValue(*v, x); })) {
      return false;
    }
  }
  return true;
}

int MatchingExcludeRule(const Grid& grid, const GridPoint& p) {
  for (size_t r = 0; r < grid.exclude.size(); ++r) {
    if (RuleMatches(grid, r, p)) return static_cast<int>(r);
  }
  return -1;
}

std::optional<int> DependentChoice(const Grid& grid, size_t d, const GridPoint& p) {
  const DependentField& dep = grid.depends[d];
  if (const json* by = AxisValue(grid, p, dep.by)) {
    for (size_t i = 0; i < dep.values.size(); ++i) {
      if (SameValue(*by, dep.values[i].first)) return static_cast<int>(i);
    }
  }
  if (dep.fallback) return -1;
  return std::nullopt;
}

json CellJson(const json& base, const Grid& grid, const GridPoint& p) {
  json j = base.is_object() ? base : json::object();
  for (size_t a = 0; a < grid.axes.size(); ++a) {
    const GridAxis& axis = grid.axes[a];
    for (size_t k = 0; k < axis.paths.size(); ++k) Place(&j, axis.paths[k], axis.values[p[a]][k]);
  }
  for (size_t d = 0; d < grid.depends.size(); ++d) {
    std::optional<int> choice = DependentChoice(grid, d, p);
    if (!choice) continue;
    const DependentField& dep = grid.depends[d];
    Place(&j, dep.path, *choice < 0 ? *dep.fallback : dep.values[*choice].second);
  }
  return j;
}

int LongestContext(const model::CellConfig& config) {
  int longest = config.model.seq_len;
  if (config.eval.niah_samples > 0 && !config.eval.niah_depths.empty()) {
    for (int len : config.eval.resolved_niah_lengths(config.model.seq_len)) {
      longest = std::max(longest, len);
    }
  }
  return longest;
}

std::optional<model::FieldError> CheckSubmittedCell(const model::CellConfig& config,
                                                    const std::string& canonical_text) {
  if (std::optional<model::FieldError> e = model::ValidateCanonical(canonical_text)) return e;
  const model::ModelConfig& m = config.model;
  if (m.HasSliding() && m.window >= LongestContext(config)) {
    const int longest = LongestContext(config);
    return model::FieldError{
        "model.window",
        std::to_string(m.window) + " covers the longest context of the cell (" +
            std::to_string(longest) +
            " tokens: model.seq_len and eval.niah_lengths), so its S layers would attend as F "
            "layers do and the cell would duplicate a full-attention one under another name; "
            "use a window below " +
            std::to_string(longest) + ", or F layers"};
  }
  return std::nullopt;
}

std::string CellId(const model::CellConfig& config) {
  return base::CellIdOf(config.CanonicalText());
}

CellSpec MakeCellSpec(const model::CellConfig& config, const std::vector<std::string>& extra_axes) {
  CellSpec cell;
  cell.config_json = config.CanonicalText();
  // A study holds up to 100,000 of these: keep only the text, not the room it grew into.
  cell.config_json.shrink_to_fit();
  cell.id = base::CellIdOf(cell.config_json);
  cell.tokens_budget = config.train.tokens;
  cell.non_embedding_params = model::NonEmbeddingParams(config.model);
  cell.train_flops_per_token = model::TrainFlopsPerToken(config.model, cell.non_embedding_params);
  cell.axes = {
      {"arch", config.model.arch},
      {"window", config.model.HasSliding() ? std::to_string(config.model.window) : "-"},
      {"pos", config.model.pos},
      {"tokens", std::to_string(config.train.tokens)},
      {"seed", std::to_string(config.train.seed)},
  };
  const json canonical = extra_axes.empty() ? json() : config.ToJson();
  for (const std::string& path : extra_axes) {
    auto [section, key] = SplitPath(path);
    const json* v = nullptr;
    if (auto s = canonical.find(section); s != canonical.end() && s->is_object()) {
      if (auto it = s->find(key); it != s->end()) v = &*it;
    }
    cell.axes[path] = v ? DisplayValue(*v) : "-";
  }
  return cell;
}

absl::StatusOr<std::vector<CellSpec>> ExpandGrid(const json& base, const Grid& grid,
                                                 const ErrorDescriber& describe,
                                                 const CellAdjuster& adjust) {
  if (grid.Size() > kMaxGridPoints) {
    return absl::InvalidArgumentError("grid: " + std::to_string(grid.Size()) +
                                      " points exceed the limit of " +
                                      std::to_string(kMaxGridPoints));
  }
  std::vector<std::string> extra;
  std::vector<std::string> varied;  // every field an axis or a dependent sets
  auto show = [&extra, &varied](const std::string& path) {
    if (std::find(varied.begin(), varied.end(), path) == varied.end()) varied.push_back(path);
    if (!FindNamedAxis(path) && std::find(extra.begin(), extra.end(), path) == extra.end()) {
      extra.push_back(path);
    }
  };
  for (const GridAxis& axis : grid.axes) {
    for (const std::string& path : axis.paths) show(path);
  }
  for (const DependentField& dep : grid.depends) show(dep.path);

  auto fail = [&describe](const model::FieldError& e, const GridPoint& p) {
    return absl::InvalidArgumentError(describe ? describe(e, p) : e.ToString());
  };
  std::vector<CellSpec> cells;
  std::unordered_map<std::string, size_t> seen;  // id -> index in cells
  for (const GridPoint& p : CartesianProduct(grid)) {
    if (MatchingExcludeRule(grid, p) >= 0) continue;
    for (size_t d = 0; d < grid.depends.size(); ++d) {
      if (DependentChoice(grid, d, p)) continue;
      const DependentField& dep = grid.depends[d];
      const json* by = AxisValue(grid, p, dep.by);
      return fail(
          {dep.path, "has no value for " + dep.by + " = " + (by ? DisplayValue(*by) : "(unset)") +
                         "; list it under values or give a default"},
          p);
    }
    json j = CellJson(base, grid, p);
    if (adjust) adjust(&j);
    model::CellConfig config;
    if (std::optional<model::FieldError> e = model::ParseCellConfig(j, &config)) {
      return fail(*e, p);
    }
    CellSpec cell = MakeCellSpec(config, extra);
    auto [it, added] = seen.emplace(cell.id, cells.size());
    if (added) {
      // Once per distinct cell: grid points that resolve alike are checked once.
      if (std::optional<model::FieldError> e = CheckSubmittedCell(config, cell.config_json)) {
        return fail(*e, p);
      }
      cells.push_back(std::move(cell));
    }
    RecordAliases(j, config.ToJson(), varied, &cells[it->second]);
  }
  return cells;
}

std::string DisplayValue(const nlohmann::json& v) {
  return v.is_string() ? v.get<std::string>() : v.dump();
}

}  // namespace onset::coordinator
