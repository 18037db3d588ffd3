#include "analysis/study_compare.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "absl/strings/str_join.h"
#include "base/metric_names.h"
#include "proto/cell_names.h"

namespace onset::analysis {
namespace {

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

// The axes to group by: spec.by, or every axis but seed (arch, window, pos and tokens first),
// plus the baseline's axis. False and *error when one is not an axis of the study.
bool GroupingAxes(const v1::GetStudyResponse& study, const CompareSpec& spec,
                  std::vector<std::string>* by, std::string* error) {
  std::set<std::string> all_axes;
  for (const v1::Cell& c : study.cells()) {
    for (const auto& [k, v] : c.axes()) all_axes.insert(k);
  }
  *by = spec.by;
  const std::string& best = spec.best_over.axis;
  if (by->empty()) {
    for (const char* named : {"arch", "window", "pos", "tokens"}) {
      if (all_axes.count(named) && named != best) by->push_back(named);
    }
    for (const std::string& a : all_axes) {
      if (a != "seed" && a != best && std::find(by->begin(), by->end(), a) == by->end()) {
        by->push_back(a);
      }
    }
  }
  if (!best.empty()) {
    if (best == "seed") {
      *error = "--best-over: seed is what the comparison aggregates over, not a nuisance axis";
      return false;
    }
    if (std::find(by->begin(), by->end(), best) != by->end() || spec.baseline.first == best) {
      *error = "--best-over: " + best +
               " is chosen within each group, so it cannot also group them (--by) or be the "
               "baseline's axis";
      return false;
    }
  }
  for (const std::string& a : *by) {
    if (!all_axes.count(a)) {
      *error = "--by: " + a + " is not an axis of study " + study.study().name() +
               " (axes: " + absl::StrJoin(all_axes, ", ") + ")";
      return false;
    }
  }
  if (!spec.baseline.first.empty()) {
    if (!all_axes.count(spec.baseline.first)) {
      *error =
          "--baseline: " + spec.baseline.first + " is not an axis of study " + study.study().name();
      return false;
    }
    // A value no cell has would leave every speed-up empty: refused, naming those there are.
    std::set<std::string> values, aliases;
    for (const v1::Cell& c : study.cells()) {
      if (auto v = c.axes().find(spec.baseline.first); v != c.axes().end())
        values.insert(v->second);
      if (auto a = c.axis_aliases().find(spec.baseline.first); a != c.axis_aliases().end()) {
        aliases.insert(a->second.values().begin(), a->second.values().end());
      }
    }
    if (!values.count(spec.baseline.second) && !aliases.count(spec.baseline.second)) {
      *error = "--baseline: no cell of study " + study.study().name() + " has " +
               spec.baseline.first + "=" + spec.baseline.second +
               " (its values: " + absl::StrJoin(values, ", ") + ")";
      return false;
    }
    if (std::find(by->begin(), by->end(), spec.baseline.first) == by->end()) {
      by->push_back(spec.baseline.first);
    }
  }
  return true;
}

// The first of the metric's controls (ControlMetrics) that some cell reported; "" when none.
std::string PreferredControl(const std::string& metric, const Curves& curves) {
  for (const std::string& name : ControlMetrics(metric)) {
    for (const auto& [cell, metrics] : curves) {
      if (metrics.count(name)) return name;
    }
  }
  return "";
}

// The points of `metric` in the curves of `cell`; none when it has none.
std::vector<Point> PointsOf(const Curves& curves, const std::string& cell,
                            const std::string& metric) {
  std::vector<Point> points;
  if (auto c = curves.find(cell); c != curves.end() && !metric.empty()) {
    if (auto m = c->second.find(metric); m != c->second.end()) {
      for (const auto& [t, v] : m->second) points.push_back({t, v});
    }
  }
  return points;
}

// The row of `table` for the cell's values of table.by, added when it is the first such cell;
// the cell's axis aliases are merged into the row's.
CompareRow& RowFor(const v1::Cell& cell, CompareTable* table,
                   std::map<std::map<std::string, std::string>, size_t>* index) {
  std::map<std::string, std::string> key;
  for (const std::string& a : table->by) {
    auto it = cell.axes().find(a);
    key[a] = it == cell.axes().end() ? "-" : it->second;
  }
  auto [it, added] = index->emplace(key, table->rows.size());
  if (added) {
    table->rows.emplace_back();
    table->rows.back().axes = key;
  }
  CompareRow& row = table->rows[it->second];
  for (const std::string& a : table->by) {
    if (auto aliases = cell.axis_aliases().find(a); aliases != cell.axis_aliases().end()) {
      for (const std::string& v : aliases->second.values()) row.aliases[a].insert(v);
    }
  }
  return row;
}

// A row's statistics over its cells: the seed summary, the Kaplan-Meier emergence, the cost
// ranges and the control's median.
void SummariseRow(const CompareSpec& spec, CompareRow* row) {
  row->summary = Summarise(row->cells);
  std::vector<Crossing> crossings;
  std::vector<double> finals, mean_logs;
  for (const CellSummary& c : row->cells) {
    crossings.push_back(c.crossing);
    if (c.final_value) finals.push_back(*c.final_value);
    if (c.mean_log) mean_logs.push_back(*c.mean_log);
  }
  row->emergence = KaplanMeier(crossings);
  row->median_interval = KaplanMeierMedianInterval(crossings, spec.level);
  row->final_spread = SpreadOf(finals);
  row->mean_log_spread = SpreadOf(mean_logs);
  row->params = RangeOf(
      row->costs, [](const CellCost& c) { return static_cast<double>(c.non_embedding_params); });
  row->flops_per_token =
      RangeOf(row->costs, [](const CellCost& c) { return c.train_flops_per_token; });
  std::vector<double> controls;
  for (const std::optional<double>& r : row->controls) {
    if (r) controls.push_back(*r);
  }
  if (!controls.empty()) row->control_median = Median(controls);
}

// Each row's speed-up over the row that matches it but for the baseline's axis.
void SetBaselines(const CompareSpec& spec, CompareTable* table) {
  for (CompareRow& row : table->rows) {
    const std::optional<size_t> found = FindBaseline(*table, row, spec.baseline);
    if (!found) continue;
    row.has_baseline = true;
    row.baseline_row = *found;
    const CompareRow& base = table->rows[*found];
    row.speed_up = SpeedUpOver(row.emergence.median, base.emergence.median);
    row.seedwise = SpeedUpOver(row.summary.max, base.summary.min);
    std::vector<Crossing> mine, theirs;
    for (const CellSummary& c : row.cells) mine.push_back(c.crossing);
    for (const CellSummary& c : base.cells) theirs.push_back(c.crossing);
    if (&row != &base) {
      row.speed_up_interval = BootstrapSpeedUp(
          mine, theirs, {spec.bootstrap_resamples, spec.bootstrap_seed, spec.level});
      row.logrank = LogRankTest(mine, theirs);
    }
  }
}

}  // namespace

const char* XAxisName(XAxis x) { return x == XAxis::kFlops ? "flops" : "tokens"; }

std::vector<std::string> ControlMetrics(const std::string& metric) {
  return metric::ControlsOf(metric);
}

CompareTable Compare(const v1::GetStudyResponse& all_cells, const Curves& curves,
                     const CompareSpec& spec, std::string* error) {
  CompareTable table;
  if (!GroupingAxes(all_cells, spec, &table.by, error)) return table;
  // With a nuisance axis: only the cells of each group's chosen value (best_over.h).
  v1::GetStudyResponse chosen;
  if (!spec.best_over.axis.empty()) {
    chosen = SelectBest(all_cells, curves, spec.best_over, table.by, spec.threshold, &table.choices,
                        error);
    if (!error->empty()) return table;
  }
  const v1::GetStudyResponse& study = spec.best_over.axis.empty() ? all_cells : chosen;
  const std::string control = PreferredControl(spec.metric, curves);
  std::set<int64_t> eval_points;
  std::map<std::map<std::string, std::string>, size_t> index;
  for (const v1::Cell& cell : study.cells()) {
    const std::vector<Point> points = PointsOf(curves, cell.id(), spec.metric);
    if (points.empty()) {
      ++table.cells_without_points;
      continue;
    }
    const CellCost cost{cell.non_embedding_params(), cell.train_flops_per_token()};
    if (spec.x == XAxis::kFlops && !(cost.train_flops_per_token > 0)) {
      ++table.cells_without_flops;
      continue;
    }
    CompareRow& row = RowFor(cell, &table, &index);
    // An unfinished cell is censored at what it has seen, not at its budget.
    const int64_t budget = wire::Ended(cell.state()) ? cell.tokens_budget() : 0;
    CellSummary s;
    s.cell_id = cell.id();
    s.crossing = TokensToThreshold(points, spec.threshold, spec.direction, budget);
    if (spec.x == XAxis::kFlops) s.crossing.at *= cost.train_flops_per_token;
    s.final_value = FinalValue(points);
    s.mean_log = MeanOverLogTokens(points);
    row.cell_ids.push_back(cell.id());
    if (!cell.study().empty()) ++row.studies[cell.study()];
    row.cells.push_back(s);
    row.costs.push_back(cost);
    row.controls.push_back(FinalValue(PointsOf(curves, cell.id(), control)));
    if (spec.x == XAxis::kTokens) {
      for (const Point& p : points) {
        if (std::isfinite(p.value)) eval_points.insert(p.tokens);
      }
    }
  }
  for (const CompareRow& row : table.rows) {
    for (const std::optional<double>& v : row.controls) {
      if (v) table.control_metric = control;
    }
  }
  table.eval_points.assign(eval_points.begin(), eval_points.end());
  for (CompareRow& row : table.rows) SummariseRow(spec, &row);
  if (!spec.baseline.first.empty()) SetBaselines(spec, &table);
  return table;
}

namespace {

nlohmann::json SpreadJson(const std::optional<Spread>& s) {
  if (!s) return nullptr;
  return {{"n", s->n}, {"mean", s->mean}, {"sd", s->sd}, {"min", s->min}, {"max", s->max}};
}

nlohmann::json SpeedUpJson(const SpeedUp& s) {
  static const char* kKinds[] = {"exact", "at_least", "at_most", "unknown"};
  return {
      {"kind", kKinds[s.kind]},
      {"value", s.kind == SpeedUp::kUnknown ? nlohmann::json(nullptr) : nlohmann::json(s.value)}};
}

}  // namespace

std::string CompareJson(const CompareTable& table, const CompareSpec& spec) {
  const bool control = !table.control_metric.empty();
  nlohmann::json groups = nlohmann::json::array();
  for (const CompareRow& row : table.rows) {
    nlohmann::json cells = nlohmann::json::array();
    std::vector<Crossing> crossings;
    for (size_t i = 0; i < row.cells.size(); ++i) {
      const CellSummary& c = row.cells[i];
      const CellCost& cost = row.costs[i];
      crossings.push_back(c.crossing);
      nlohmann::json cell = {{"cell_id", c.cell_id},
                             {"crossing", CrossingJson(c.crossing, spec.x)}};
      cell["final"] = Optional(c.final_value);
      cell["mean_over_log_tokens"] = Optional(c.mean_log);
      if (control) cell["control_final"] = Optional(row.controls[i]);
      cell["non_embedding_params"] = cost.non_embedding_params > 0
                                         ? nlohmann::json(cost.non_embedding_params)
                                         : nlohmann::json(nullptr);
      cell["train_flops_per_token"] = cost.train_flops_per_token > 0
                                          ? nlohmann::json(cost.train_flops_per_token)
                                          : nlohmann::json(nullptr);
      cells.push_back(cell);
    }
    const GroupSummary& s = row.summary;
    const Emergence& e = row.emergence;
    nlohmann::json steps = nlohmann::json::array();
    for (const EmergenceStep& step : e.steps) {
      steps.push_back({{XAxisName(spec.x), step.at},
                       {"at_risk", step.at_risk},
                       {"events", step.events},
                       {"emerged", step.emerged}});
    }
    nlohmann::json by_point = nlohmann::json::array();
    for (int64_t t : table.eval_points) {
      const CrossedBy c = CountCrossedBy(crossings, static_cast<double>(t));
      by_point.push_back({{"tokens", t},
                          {"crossed", c.crossed},
                          {"observed", c.observed},
                          {"emerged", e.EmergedBy(static_cast<double>(t))}});
    }
    nlohmann::json g = {{"axes", row.axes},
                        {"n", s.n},
                        {"left_censored", s.left_censored},
                        {"censored", s.censored},
                        {"crossed", e.crossed},
                        {"median", CrossingJson(e.median, spec.x)},
                        {"min", CrossingJson(s.min, spec.x)},
                        {"max", CrossingJson(s.max, spec.x)},
                        {"emergence", {{"steps", steps}, {"by_eval_point", by_point}}},
                        {"cells", cells}};
    g["median_interval"] = {{"level", row.median_interval.level},
                            {"lower", CrossingJson(row.median_interval.lower, spec.x)},
                            {"upper", CrossingJson(row.median_interval.upper, spec.x)}};
    g["final_median"] = Optional(s.final_median);
    g["final"] = SpreadJson(row.final_spread);
    g["mean_over_log_tokens_median"] = Optional(s.mean_log_median);
    g["mean_over_log_tokens"] = SpreadJson(row.mean_log_spread);
    if (control) g["control_final_median"] = Optional(row.control_median);
    g["non_embedding_params"] = RangeJson(row.params);
    g["train_flops_per_token"] = RangeJson(row.flops_per_token);
    if (!row.aliases.empty()) g["aliases"] = row.aliases;
    if (!row.studies.empty()) g["studies"] = row.studies;
    if (row.has_baseline) {
      g["speed_up"] = SpeedUpJson(row.speed_up);
      g["speed_up"]["baseline_axes"] = table.rows[row.baseline_row].axes;
      g["seedwise_speed_up"] = SpeedUpJson(row.seedwise);
      if (row.baseline_row != static_cast<size_t>(&row - table.rows.data())) {
        const SpeedUpInterval& i = row.speed_up_interval;
        g["speed_up"]["interval"] = {{"level", spec.level},
                                     {"lower", SpeedUpJson(i.lower)},
                                     {"upper", SpeedUpJson(i.upper)},
                                     {"resamples", i.resamples},
                                     {"bounded_resamples", i.bounded},
                                     {"unknown_resamples", i.unknown},
                                     {"seed", spec.bootstrap_seed}};
        g["logrank"] = row.logrank.defined ? nlohmann::json{{"statistic", row.logrank.statistic},
                                                            {"p_value", row.logrank.p_value},
                                                            {"observed", row.logrank.observed_a},
                                                            {"expected", row.logrank.expected_a}}
                                           : nlohmann::json(nullptr);
      }
    }
    groups.push_back(g);
  }
  nlohmann::json out = {{"metric", spec.metric},
                        {"threshold", spec.threshold},
                        {"direction", spec.direction == Direction::kUp ? "up" : "down"},
                        {"x", XAxisName(spec.x)},
                        {"by", table.by},
                        {"groups", groups},
                        {"eval_points", table.eval_points},
                        {"cells_without_points", table.cells_without_points}};
  if (spec.x == XAxis::kFlops) out["cells_without_flops"] = table.cells_without_flops;
  if (!spec.best_over.axis.empty()) {
    nlohmann::json choices = nlohmann::json::array();
    for (const BestOverChoice& c : table.choices) {
      nlohmann::json scores = nlohmann::json::object();
      for (const auto& [value, score] : c.scores) scores[value] = Optional(score);
      nlohmann::json choice = {
          {"axes", c.group},
          {"chosen", c.chosen.empty() ? nlohmann::json(nullptr) : nlohmann::json(c.chosen)},
          {"scores", scores},
          {"selection_cells", c.selection_cells}};
      if (!c.medians.empty()) {
        nlohmann::json medians = nlohmann::json::object();
        for (const auto& [value, median] : c.medians) {
          medians[value] = CrossingJson(median, XAxis::kTokens);
        }
        choice["medians"] = medians;
      }
      choices.push_back(choice);
    }
    const BestOverSpec& b = spec.best_over;
    out["best_over"] = {{"axis", b.axis},
                        {"metric", b.metric},
                        {"rule", RuleName(b.rule)},
                        {"selection_seeds", b.selection_seeds},
                        {"choices", choices}};
  }
  if (control) {
    out["control_metric"] = table.control_metric;
    // What the control measures, so that no reader parses its name.
    out["control_kind"] = metric::IsKeySwap(table.control_metric) ? "key_swap" : "copy";
  }
  if (!spec.baseline.first.empty()) {
    out["baseline"] = {{spec.baseline.first, spec.baseline.second}};
  }
  return out.dump(2) + "\n";
}

}  // namespace onset::analysis
