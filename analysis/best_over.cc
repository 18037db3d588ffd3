#include "analysis/best_over.h"

#include <algorithm>
#include <cmath>

#include "analysis/survival.h"
#include "proto/cell_names.h"

namespace onset::analysis {
namespace {

std::string AxisOf(const v1::Cell& cell, const std::string& axis) {
  auto it = cell.axes().find(axis);
  return it == cell.axes().end() ? "-" : it->second;
}

std::vector<Point> Points(const SelectionCurves& curves, const std::string& cell,
                          const std::string& metric) {
  std::vector<Point> out;
  if (auto c = curves.find(cell); c != curves.end()) {
    if (auto m = c->second.find(metric); m != c->second.end()) {
      for (const auto& [t, v] : m->second) out.push_back({t, v});
    }
  }
  return out;
}

// Ranks crossings: known ones (exact, left-censored) by their time, then right-censored ones by
// their bound, unknown last.
std::pair<int, double> CrossingRank(const Crossing& c) {
  if (c.reached()) return {0, c.at};
  if (c.kind == Crossing::kRight) return {1, c.at};
  return {2, 0};
}

}  // namespace

const char* RuleName(BestOverSpec::Rule rule) {
  switch (rule) {
    case BestOverSpec::Rule::kMin:
      return "min";
    case BestOverSpec::Rule::kMax:
      return "max";
    case BestOverSpec::Rule::kCrossing:
      return "crossing";
  }
  return "?";
}

v1::GetStudyResponse SelectBest(const v1::GetStudyResponse& study, const SelectionCurves& curves,
                                const BestOverSpec& spec, const std::vector<std::string>& by,
                                double threshold, std::vector<BestOverChoice>* choices,
                                std::string* error) {
  bool has_axis = false;
  for (const v1::Cell& c : study.cells()) has_axis |= c.axes().count(spec.axis) > 0;
  if (!has_axis) {
    *error = "--best-over: " + spec.axis + " is not an axis of study " + study.study().name();
    return study;
  }
  const auto group_of = [&](const v1::Cell& c) {
    std::map<std::string, std::string> key;
    for (const std::string& a : by) key[a] = AxisOf(c, a);
    return key;
  };
  const auto selects = [&](const v1::Cell& c) {
    return spec.selection_seeds.empty() || spec.selection_seeds.count(AxisOf(c, "seed")) > 0;
  };
  // Group -> value -> the selection cells' finals and crossings.
  struct Scores {
    std::vector<double> finals;
    std::vector<Crossing> crossings;
    int cells = 0;
  };
  std::vector<std::map<std::string, std::string>> order;
  std::map<std::map<std::string, std::string>, std::map<std::string, Scores>> groups;
  const Direction direction = DefaultDirection(spec.metric);
  for (const v1::Cell& c : study.cells()) {
    const auto key = group_of(c);
    if (!groups.count(key)) order.push_back(key);
    Scores& s = groups[key][AxisOf(c, spec.axis)];
    if (!selects(c)) continue;
    ++s.cells;
    const std::vector<Point> points = Points(curves, c.id(), spec.metric);
    if (points.empty()) continue;
    if (std::optional<double> f = FinalValue(points); f && std::isfinite(*f)) {
      s.finals.push_back(*f);
    }
    const int64_t budget = wire::Ended(c.state()) ? c.tokens_budget() : 0;
    s.crossings.push_back(TokensToThreshold(points, threshold, direction, budget));
  }
  std::map<std::map<std::string, std::string>, std::string> chosen;
  for (const auto& key : order) {
    BestOverChoice choice;
    choice.group = key;
    std::optional<std::pair<int, double>> best_rank;
    std::optional<double> best_score;
    for (const auto& [value, s] : groups[key]) {  // values in sort order: ties to the first
      choice.selection_cells += s.cells;
      if (spec.rule == BestOverSpec::Rule::kCrossing) {
        if (s.crossings.empty()) {
          choice.scores[value] = std::nullopt;
          continue;
        }
        const Crossing median = KaplanMeier(s.crossings).median;
        choice.medians[value] = median;
        choice.scores[value] =
            median.kind == Crossing::kUnknown ? std::nullopt : std::optional<double>(median.at);
        const auto rank = CrossingRank(median);
        if (rank.first < 2 && (!best_rank || rank < *best_rank)) {
          best_rank = rank;
          choice.chosen = value;
        }
        continue;
      }
      if (s.finals.empty()) {
        choice.scores[value] = std::nullopt;
        continue;
      }
      double mean = 0;
      for (double f : s.finals) mean += f;
      mean /= static_cast<double>(s.finals.size());
      choice.scores[value] = mean;
      const bool better =
          !best_score ||
          (spec.rule == BestOverSpec::Rule::kMin ? mean < *best_score : mean > *best_score);
      if (better) {
        best_score = mean;
        choice.chosen = value;
      }
    }
    chosen[key] = choice.chosen;
    choices->push_back(std::move(choice));
  }
  v1::GetStudyResponse kept = study;
  kept.clear_cells();
  for (const v1::Cell& c : study.cells()) {
    const std::string& value = chosen[group_of(c)];
    if (value.empty() || AxisOf(c, spec.axis) != value) continue;
    if (!spec.selection_seeds.empty() && selects(c)) continue;  // chose: not reported on
    *kept.add_cells() = c;
  }
  return kept;
}

}  // namespace onset::analysis
