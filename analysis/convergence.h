// How fast a capability emerges, from a metric's curve against tokens seen (docs/metrics.md,
// "Emergence: tokens to threshold"): tokens-to-threshold with log-linear interpolation and
// censoring on both sides, the area under the curve over log(tokens), and the aggregation of
// seeds into groups.
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
// interpolated linearly: log T = log t0 + (x - v0) / (v1 - v0) * (log t1 - log t0).
//
// Three outcomes, never a number where only a bound is known:
//   kExact  crossed between two eval points, at `at`;
//   kLeft   left-censored: the first eval point is already past the threshold, so the curve
//           crossed at or before it, "<= at" (at = the first point's tokens);
//   kRight  right-censored: it never crossed, "> at" (at = the budget, or the last point's
//           tokens when that is larger; an empty curve counts as never crossing).
// kUnknown is never a cell's crossing: Summarise gives it to a group statistic its cells bound
// on neither side.
struct Crossing {
  enum Kind { kExact, kLeft, kRight, kUnknown };
  Kind kind = kRight;
  double at = 0;  // the crossing or the bound; tokens, or whatever x the caller scaled it to

  // Crossed by `at` (exact or left-censored).
  bool reached() const { return kind == kExact || kind == kLeft; }
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

// Order statistics of censored crossings. Each cell's crossing is an interval its true value
// lies in: exact [t, t], left-censored (0, b], right-censored (b, inf). The k-th smallest true
// value of a group then lies between the k-th smallest lower end and the k-th smallest upper
// end (both are monotone in every cell's value), and min (k = 1), max (k = n) and the median
// (k = (n + 1) / 2; for even n the geometric mean of k = n / 2 and n / 2 + 1, ends combined
// alike, since tokens compare on a log scale) are reported from those two ends, conservatively:
//   the ends meet                 exact;
//   the upper end is finite       left-censored "<= upper" (also when the lower end is above 0:
//                                 the claim stays true, only looser);
//   only the lower end is above 0 right-censored "> lower";
//   neither                       kUnknown (e.g. the median of one left- and one right-censored
//                                 seed: it could be anything).
// With one eval schedule and finished cells this is the order left-censored < exact <
// right-censored: a left-censored cell counts as smaller than every exact crossing at or above
// its bound (all of them: an exact crossing lies past the first eval point), a right-censored
// one as larger than every crossing below its bound. Where bounds and crossings interleave
// (unfinished cells censored at what they have seen, other eval schedules), a statistic whose
// cell could sit on either side of a crossing becomes a bound rather than a number: the min of
// {exact 2M, right-censored at 500K (still running)} is "<= 2M".
struct GroupSummary {
  int n = 0;              // cells in the group
  int left_censored = 0;  // of which crossed at or before their first eval point
  int censored = 0;       // of which never crossed (right-censored)
  Crossing median, min, max;
  std::optional<double> final_median;
  std::optional<double> mean_log_median;
};
GroupSummary Summarise(const std::vector<CellSummary>& cells);

// How many times fewer tokens `group` needs than `baseline` to cross: baseline / group. With
// censoring the ratio is only bounded (b, g: the two `at`s; "<=", ">=" also stand for the strict
// bounds of right-censoring):
//
//   group / baseline     exact b        left "<= b"    right "> b"    unknown
//   exact g              kExact b/g     kAtMost b/g    kAtLeast b/g   kUnknown
//   left "<= g"          kAtLeast b/g   kUnknown       kAtLeast b/g   kUnknown
//   right "> g"          kAtMost b/g    kAtMost b/g    kUnknown       kUnknown
//   unknown              kUnknown       kUnknown       kUnknown       kUnknown
//
// e.g. a group left-censored at 250K against a baseline that crossed at 2M is ">= 8x": it
// needed at most 250K where the baseline needed 2M. Both left-censored: either could be faster.
struct SpeedUp {
  enum Kind { kExact, kAtLeast, kAtMost, kUnknown } kind = kUnknown;
  double value = 0;
};
SpeedUp SpeedUpOver(const Crossing& group, const Crossing& baseline);

}  // namespace onset::analysis
