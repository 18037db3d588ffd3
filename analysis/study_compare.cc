#include "analysis/study_compare.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>

#include "absl/strings/str_join.h"

namespace onset::analysis {
namespace {

bool Ended(v1::CellState s) {
  return s == v1::CELL_STATE_SUCCEEDED || s == v1::CELL_STATE_FAILED ||
         s == v1::CELL_STATE_DIVERGED || s == v1::CELL_STATE_CANCELLED;
}

nlohmann::json CrossingJson(const Crossing& c) {
  return c.crossed ? nlohmann::json{{"tokens", c.tokens}}
                   : nlohmann::json{{"tokens", nullptr}, {"censored_above", c.tokens}};
}

}  // namespace

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
  if (!spec.baseline.first.empty() && !all_axes.count(spec.baseline.first)) {
    *error =
        "--baseline: " + spec.baseline.first + " is not an axis of study " + study.study().name();
    return table;
  }

  std::map<std::map<std::string, std::string>, size_t> index;
  for (const v1::Cell& cell : study.cells()) {
    std::vector<Point> points;
    if (auto c = curves.find(cell.id()); c != curves.end()) {
      if (auto m = c->second.find(spec.metric); m != c->second.end()) {
        for (const auto& [t, v] : m->second) points.push_back({t, v});
      }
    }
    if (points.empty()) {
      ++table.cells_without_points;
      continue;
    }
    std::map<std::string, std::string> key;
    for (const std::string& a : table.by) {
      auto it = cell.axes().find(a);
      key[a] = it == cell.axes().end() ? "-" : it->second;
    }
    auto [it, added] = index.emplace(key, table.rows.size());
    if (added) table.rows.push_back(CompareRow{key, {}, {}, {}, false, {}});
    CompareRow& row = table.rows[it->second];
    // An unfinished cell is censored at what it has seen, not at its budget.
    const int64_t budget = Ended(cell.state()) ? cell.tokens_budget() : 0;
    CellSummary s;
    s.cell_id = cell.id();
    s.crossing = TokensToThreshold(points, spec.threshold, spec.direction, budget);
    s.final_value = FinalValue(points);
    s.mean_log = MeanOverLogTokens(points);
    row.cell_ids.push_back(cell.id());
    row.cells.push_back(s);
  }
  for (CompareRow& row : table.rows) row.summary = Summarise(row.cells);
  if (!spec.baseline.first.empty()) {
    // A group's baseline: the group with the baseline value on the baseline axis and the same
    // values on every other grouping axis, except axes that do not apply to it ("-", e.g. the
    // window of a full-attention cell). None, or more than one, and the row has no baseline.
    for (CompareRow& row : table.rows) {
      const CompareRow* found = nullptr;
      int matches = 0;
      for (const CompareRow& candidate : table.rows) {
        bool match = candidate.axes.at(spec.baseline.first) == spec.baseline.second;
        for (const std::string& a : table.by) {
          if (a == spec.baseline.first) continue;
          const std::string& v = candidate.axes.at(a);
          match = match && (v == row.axes.at(a) || v == "-");
        }
        if (match) {
          found = &candidate;
          ++matches;
        }
      }
      if (matches != 1) continue;
      row.has_baseline = true;
      row.speed_up = SpeedUpOver(row.summary.median, found->summary.median);
    }
  }
  return table;
}

std::string CompareJson(const CompareTable& table, const CompareSpec& spec) {
  nlohmann::json groups = nlohmann::json::array();
  for (const CompareRow& row : table.rows) {
    nlohmann::json cells = nlohmann::json::array();
    for (const CellSummary& c : row.cells) {
      nlohmann::json cell = {{"cell_id", c.cell_id}, {"crossing", CrossingJson(c.crossing)}};
      cell["final"] = c.final_value ? nlohmann::json(*c.final_value) : nlohmann::json(nullptr);
      cell["mean_over_log_tokens"] =
          c.mean_log ? nlohmann::json(*c.mean_log) : nlohmann::json(nullptr);
      cells.push_back(cell);
    }
    const GroupSummary& s = row.summary;
    nlohmann::json g = {{"axes", row.axes},
                        {"n", s.n},
                        {"censored", s.censored},
                        {"median", CrossingJson(s.median)},
                        {"min", CrossingJson(s.min)},
                        {"max", CrossingJson(s.max)},
                        {"cells", cells}};
    g["final_median"] = s.final_median ? nlohmann::json(*s.final_median) : nlohmann::json(nullptr);
    g["mean_over_log_tokens_median"] =
        s.mean_log_median ? nlohmann::json(*s.mean_log_median) : nlohmann::json(nullptr);
    if (row.has_baseline) {
      static const char* kKinds[] = {"exact", "at_least", "at_most", "unknown"};
      g["speed_up"] = {
          {"kind", kKinds[row.speed_up.kind]},
          {"value", row.speed_up.kind == SpeedUp::kUnknown ? nlohmann::json(nullptr)
                                                           : nlohmann::json(row.speed_up.value)}};
    }
    groups.push_back(g);
  }
  nlohmann::json out = {{"metric", spec.metric},
                        {"threshold", spec.threshold},
                        {"direction", spec.direction == Direction::kUp ? "up" : "down"},
                        {"by", table.by},
                        {"groups", groups},
                        {"cells_without_points", table.cells_without_points}};
  if (!spec.baseline.first.empty()) {
    out["baseline"] = {{spec.baseline.first, spec.baseline.second}};
  }
  return out.dump(2) + "\n";
}

}  // namespace onset::analysis
