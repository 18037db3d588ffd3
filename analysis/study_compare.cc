#include "analysis/study_compare.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "absl/strings/str_join.h"

namespace onset::analysis {
namespace {

bool Ended(v1::CellState s) {
  return s == v1::CELL_STATE_SUCCEEDED || s == v1::CELL_STATE_FAILED ||
         s == v1::CELL_STATE_DIVERGED || s == v1::CELL_STATE_CANCELLED;
}

nlohmann::json CrossingJson(const Crossing& c, XAxis x) {
  const char* key = XAxisName(x);
  switch (c.kind) {
    case Crossing::kExact:
      return {{key, c.at}};
    case Crossing::kLeft:
      return {{key, nullptr}, {"censored_below", c.at}};
    case Crossing::kRight:
      return {{key, nullptr}, {"censored_above", c.at}};
    case Crossing::kUnknown:
      break;
  }
  return {{key, nullptr}};
}

nlohmann::json Optional(const std::optional<double>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

nlohmann::json RangeJson(const std::optional<Range>& r) {
  return r ? nlohmann::json{{"min", r->min}, {"max", r->max}} : nlohmann::json(nullptr);
}

// The range of the positive values `get` gives for the row's cells; nullopt when none is.
template <typename Get>
std::optional<Range> RangeOf(const std::vector<CellCost>& costs, Get get) {
  std::optional<Range> r;
  for (const CellCost& c : costs) {
    const double v = get(c);
    if (!(v > 0)) continue;
    if (!r) r = Range{v, v};
    r->min = std::min(r->min, v);
    r->max = std::max(r->max, v);
  }
  return r;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// How a candidate group matches a row on one axis: by its own value (or "-" where the axis does
// not apply to it, when `dash` allows), through a value its cells stand for, or not.
enum class Match { kNo, kAlias, kDirect };

Match MatchValue(const CompareRow& candidate, const std::string& axis, const std::string& value,
                 bool dash) {
  const std::string& v = candidate.axes.at(axis);
  if (v == value || (dash && v == "-")) return Match::kDirect;
  auto it = candidate.aliases.find(axis);
  if (it != candidate.aliases.end() && it->second.count(value)) return Match::kAlias;
  return Match::kNo;
}

// The baseline group of `row`: the only direct match, else the only match through aliases.
std::optional<size_t> FindBaseline(const CompareTable& table, const CompareRow& row,
                                   const std::pair<std::string, std::string>& baseline) {
  std::vector<size_t> direct, aliased;
  for (size_t i = 0; i < table.rows.size(); ++i) {
    const CompareRow& candidate = table.rows[i];
    Match m = MatchValue(candidate, baseline.first, baseline.second, /*dash=*/false);
    for (const std::string& a : table.by) {
      if (a == baseline.first || m == Match::kNo) continue;
      m = std::min(m, MatchValue(candidate, a, row.axes.at(a), /*dash=*/true));
    }
    if (m == Match::kDirect) direct.push_back(i);
    if (m == Match::kAlias) aliased.push_back(i);
  }
  if (!direct.empty()) {
    if (direct.size() == 1) return direct.front();
    return std::nullopt;
  }
  if (aliased.size() == 1) return aliased.front();
  return std::nullopt;
}

}  // namespace

const char* XAxisName(XAxis x) { return x == XAxis::kFlops ? "flops" : "tokens"; }

std::string CopyRateMetric(const std::string& metric) {
  const std::string acc = "niah/acc";
  const std::string rate = "niah/control/distractor_copy_rate";
  if (metric.rfind(acc, 0) != 0) return "";
  if (metric.rfind(acc + "@", 0) == 0) return rate + metric.substr(acc.size());
  return rate;
}

CompareTable Compare(const v1::GetStudyResponse& study, const Curves& curves,
                     const CompareSpec& spec, std::string* error) {
  CompareTable table;
  std::set<std::string> all_axes;
  for (const v1::Cell& c : study.cells()) {
    for (const auto& [k, v] : c.axes()) all_axes.insert(k);
  }
  table.by = spec.by;
  if (table.by.empty()) {
    for (const char* named : {"arch", "window", "pos", "tokens"}) {
      if (all_axes.count(named)) table.by.push_back(named);
    }
    for (const std::string& a : all_axes) {
      if (a != "seed" && std::find(table.by.begin(), table.by.end(), a) == table.by.end()) {
        table.by.push_back(a);
      }
    }
  }
  for (const std::string& a : table.by) {
    if (!all_axes.count(a)) {
      *error = "--by: " + a + " is not an axis of study " + study.study().name() +
               " (axes: " + absl::StrJoin(all_axes, ", ") + ")";
      return table;
    }
  }
  if (!spec.baseline.first.empty()) {
    if (!all_axes.count(spec.baseline.first)) {
      *error =
          "--baseline: " + spec.baseline.first + " is not an axis of study " + study.study().name();
      return table;
    }
    if (std::find(table.by.begin(), table.by.end(), spec.baseline.first) == table.by.end()) {
      table.by.push_back(spec.baseline.first);
    }
  }

  const std::string copy_metric = CopyRateMetric(spec.metric);
  bool any_copy_rate = false;
  std::map<std::map<std::string, std::string>, size_t> index;
  for (const v1::Cell& cell : study.cells()) {
    std::vector<Point> points, copy_points;
    if (auto c = curves.find(cell.id()); c != curves.end()) {
      if (auto m = c->second.find(spec.metric); m != c->second.end()) {
        for (const auto& [t, v] : m->second) points.push_back({t, v});
      }
      if (auto m = c->second.find(copy_metric); !copy_metric.empty() && m != c->second.end()) {
        for (const auto& [t, v] : m->second) copy_points.push_back({t, v});
      }
    }
    if (points.empty()) {
      ++table.cells_without_points;
      continue;
    }
    const CellCost cost{cell.non_embedding_params(), cell.train_flops_per_token()};
    if (spec.x == XAxis::kFlops && !(cost.train_flops_per_token > 0)) {
      ++table.cells_without_flops;
      continue;
    }
    std::map<std::string, std::string> key;
    for (const std::string& a : table.by) {
      auto it = cell.axes().find(a);
      key[a] = it == cell.axes().end() ? "-" : it->second;
    }
    auto [it, added] = index.emplace(key, table.rows.size());
    if (added) {
      table.rows.emplace_back();
      table.rows.back().axes = key;
    }
    CompareRow& row = table.rows[it->second];
    for (const std::string& a : table.by) {
      if (auto aliases = cell.axis_aliases().find(a); aliases != cell.axis_aliases().end()) {
        for (const std::string& v : aliases->second.values()) row.aliases[a].insert(v);
      }
    }
    // An unfinished cell is censored at what it has seen, not at its budget.
    const int64_t budget = Ended(cell.state()) ? cell.tokens_budget() : 0;
    CellSummary s;
    s.cell_id = cell.id();
    s.crossing = TokensToThreshold(points, spec.threshold, spec.direction, budget);
    if (spec.x == XAxis::kFlops) s.crossing.at *= cost.train_flops_per_token;
    s.final_value = FinalValue(points);
    s.mean_log = MeanOverLogTokens(points);
    row.cell_ids.push_back(cell.id());
    row.cells.push_back(s);
    row.costs.push_back(cost);
    row.copy_rates.push_back(FinalValue(copy_points));
    any_copy_rate |= row.copy_rates.back().has_value();
  }
  if (any_copy_rate) table.copy_rate_metric = copy_metric;
  for (CompareRow& row : table.rows) {
    row.summary = Summarise(row.cells);
    row.params = RangeOf(
        row.costs, [](const CellCost& c) { return static_cast<double>(c.non_embedding_params); });
    row.flops_per_token =
        RangeOf(row.costs, [](const CellCost& c) { return c.train_flops_per_token; });
    std::vector<double> rates;
    for (const std::optional<double>& r : row.copy_rates) {
      if (r) rates.push_back(*r);
    }
    if (!rates.empty()) row.copy_rate_median = Median(rates);
  }
  if (!spec.baseline.first.empty()) {
    for (CompareRow& row : table.rows) {
      const std::optional<size_t> found = FindBaseline(table, row, spec.baseline);
      if (!found) continue;
      row.has_baseline = true;
      row.baseline_row = *found;
      row.speed_up = SpeedUpOver(row.summary.median, table.rows[*found].summary.median);
    }
  }
  return table;
}

std::string CompareJson(const CompareTable& table, const CompareSpec& spec) {
  const bool copy = !table.copy_rate_metric.empty();
  nlohmann::json groups = nlohmann::json::array();
  for (const CompareRow& row : table.rows) {
    nlohmann::json cells = nlohmann::json::array();
    for (size_t i = 0; i < row.cells.size(); ++i) {
      const CellSummary& c = row.cells[i];
      const CellCost& cost = row.costs[i];
      nlohmann::json cell = {{"cell_id", c.cell_id},
                             {"crossing", CrossingJson(c.crossing, spec.x)}};
      cell["final"] = Optional(c.final_value);
      cell["mean_over_log_tokens"] = Optional(c.mean_log);
      if (copy) cell["copy_rate_final"] = Optional(row.copy_rates[i]);
      cell["non_embedding_params"] = cost.non_embedding_params > 0
                                         ? nlohmann::json(cost.non_embedding_params)
                                         : nlohmann::json(nullptr);
      cell["train_flops_per_token"] = cost.train_flops_per_token > 0
                                          ? nlohmann::json(cost.train_flops_per_token)
                                          : nlohmann::json(nullptr);
      cells.push_back(cell);
    }
    const GroupSummary& s = row.summary;
    nlohmann::json g = {{"axes", row.axes},
                        {"n", s.n},
                        {"left_censored", s.left_censored},
                        {"censored", s.censored},
                        {"median", CrossingJson(s.median, spec.x)},
                        {"min", CrossingJson(s.min, spec.x)},
                        {"max", CrossingJson(s.max, spec.x)},
                        {"cells", cells}};
    g["final_median"] = Optional(s.final_median);
    g["mean_over_log_tokens_median"] = Optional(s.mean_log_median);
    if (copy) g["copy_rate_final_median"] = Optional(row.copy_rate_median);
    g["non_embedding_params"] = RangeJson(row.params);
    g["train_flops_per_token"] = RangeJson(row.flops_per_token);
    if (!row.aliases.empty()) g["aliases"] = row.aliases;
    if (row.has_baseline) {
      static const char* kKinds[] = {"exact", "at_least", "at_most", "unknown"};
      g["speed_up"] = {
          {"kind", kKinds[row.speed_up.kind]},
          {"value", row.speed_up.kind == SpeedUp::kUnknown ? nlohmann::json(nullptr)
                                                           : nlohmann::json(row.speed_up.value)},
          {"baseline_axes", table.rows[row.baseline_row].axes}};
    }
    groups.push_back(g);
  }
  nlohmann::json out = {{"metric", spec.metric},
                        {"threshold", spec.threshold},
                        {"direction", spec.direction == Direction::kUp ? "up" : "down"},
                        {"x", XAxisName(spec.x)},
                        {"by", table.by},
                        {"groups", groups},
                        {"cells_without_points", table.cells_without_points}};
  if (spec.x == XAxis::kFlops) out["cells_without_flops"] = table.cells_without_flops;
  if (copy) out["copy_rate_metric"] = table.copy_rate_metric;
  if (!spec.baseline.first.empty()) {
    out["baseline"] = {{spec.baseline.first, spec.baseline.second}};
  }
  return out.dump(2) + "\n";
}

}  // namespace onset::analysis
