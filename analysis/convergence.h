// How fast a capability emerges, from a metric's curve against tokens seen (SCIENCE.md,
// "Emergence speed"): tokens-to-threshold with log-linear interpolation and right-censoring,
// the area under the curve over log(tokens), and the aggregation of seeds into cell groups.
// Pure functions: no I/O, no RPC; the CLI, the exports and the dashboard share them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace onset::analysis {

struct Point {
  int64_t tokens = 0;
  double value = 0;  // NaN points are ignored
};

// kUp: the metric crosses when it reaches the threshold from below (accuracies, scores);
// kDown: when it falls to it (losses).
enum class Direction { kUp, kDown };
// kDown for names that contain "loss", kUp otherwise.
Direction DefaultDirection(const std::string& metric);

// T(x): the first tokens count at which the curve crosses `threshold`. Between the last eval
// point before the crossing (t0, v0) and the first at or past it (t1, v1), log(T) is
// interpolated linearly: log T = log t0 + (x - v0) / (v1 - v0) * (log t1 - log t0). A curve
// whose first point already crosses gives that point's tokens (nothing earlier was measured).
// A curve that never crosses is right-censored: `crossed` false, and `tokens` holds the budget
// (or the last point's tokens) as the bound "> tokens" - never a value.
struct Crossing {
  bool crossed = false;
  double tokens = 0;  // the crossing, or the censoring bound when !crossed
};
Crossing TokensToThreshold(std::vector<Point> curve, double threshold, Direction direction,
                           int64_t budget);

// The integral of value d(log tokens) over the curve's span (trapezoids), divided by the span
// in log tokens: the curve's mean over log-spaced training time, comparable across budgets.
// nullopt for fewer than two points.
std::optional<double> MeanOverLogTokens(std::vector<Point> curve);

// The value at the largest tokens count; nullopt for an empty curve.
std::optional<double> FinalValue(std::vector<Point> curve);

// One cell's numbers, and the summary of a group of cells (usually the seeds of one config).
struct CellSummary {
  std::string cell_id;
  Crossing crossing;
  std::optional<double> final_value;
  std::optional<double> mean_log;
};

struct GroupSummary {
  int n = 0;                      // cells in the group
  int censored = 0;               // of which never crossed
  // The median over the group, a censored cell counting as larger than every crossing: when it
  // falls on a censored cell the median is censored too (crossed false, tokens = the smallest
  // bound among the censored). min and max likewise (max censored when any cell is).
  Crossing median, min, max;
  std::optional<double> final_median;
  std::optional<double> mean_log_median;
};
GroupSummary Summarise(const std::vector<CellSummary>& cells);

// How many times fewer tokens `group` needs than `baseline` to cross: baseline / group. With
// censoring the ratio is only bounded: kAtMost when the group never crossed (it is below
// baseline / bound), kAtLeast when the baseline never crossed; kUnknown when neither did.
struct SpeedUp {
  enum Kind { kExact, kAtLeast, kAtMost, kUnknown } kind = kUnknown;
  double value = 0;
};
SpeedUp SpeedUpOver(const Crossing& group, const Crossing& baseline);

}  // namespace onset::analysis
