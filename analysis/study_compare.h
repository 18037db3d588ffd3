// Comparing a study's cells (`onset compare`, the dashboard): cells grouped by the axes asked
// for (seeds aggregated), per group the seeds' emergence as a Kaplan-Meier curve (survival.h:
// how many crossed by each eval point, the median tokens-to-threshold with its censoring) or
// training FLOPs to threshold, the final value, the mean over log tokens, the model's size and
// cost, the final NIAH control (the key-swap rate) beside a NIAH accuracy, and the speed-up
// against a baseline group (convergence.h). Pure: the study and its curves in, the table or
// its JSON out.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "analysis/best_over.h"
#include "analysis/bootstrap.h"
#include "analysis/convergence.h"
#include "analysis/logrank.h"
#include "analysis/median_interval.h"
#include "analysis/spread.h"
#include "analysis/survival.h"
#include "onset/v1/onset.pb.h"

namespace onset::analysis {

// cell id -> metric -> (tokens, value) points.
using Curves =
    std::map<std::string, std::map<std::string, std::vector<std::pair<int64_t, double>>>>;
// cell id -> metric -> when each point of the same curve of a Curves was measured, in
// milliseconds since the Unix epoch (0: not known).
using CurveTimes = std::map<std::string, std::map<std::string, std::vector<int64_t>>>;

// What the crossings are counted in: tokens seen, or training FLOPs (tokens x the cell's
// training FLOPs per token, v1::Cell::train_flops_per_token). Log-linear interpolation commutes
// with that per-cell factor, so a cell's FLOPs to threshold is its tokens to threshold times
// its FLOPs per token (censoring bounds alike), and the mean over log x is unchanged.
enum class XAxis { kTokens, kFlops };
// "tokens", "flops".
const char* XAxisName(XAxis x);

struct CompareSpec {
  std::string metric;
  double threshold = 0;
  Direction direction = Direction::kUp;
  std::vector<std::string> by;                   // empty: every display axis but seed
  std::pair<std::string, std::string> baseline;  // axis, value; empty axis: none
  XAxis x = XAxis::kTokens;
  // The uncertainty shown with every answer: the level of the median's interval and the
  // speed-up's, and the bootstrap's resamples and seed (bootstrap.h).
  double level = 0.95;
  int bootstrap_resamples = 2000;
  uint64_t bootstrap_seed = 1;
  // A nuisance axis chosen per group by a stated rule (best_over.h); axis empty: none.
  BestOverSpec best_over;
};

// A cell's model, as the coordinator sizes it (v1::Cell); 0 when unknown (an older
// coordinator, or a config it cannot read).
struct CellCost {
  int64_t non_embedding_params = 0;
  double train_flops_per_token = 0;
};

// The least and the largest value over a group's cells.
struct Range {
  double min = 0;
  double max = 0;
};

struct CompareRow {
  std::map<std::string, std::string> axes;  // the group's values of the `by` axes
  // Other values of the `by` axes that its cells also stand for (v1::Cell::axis_aliases: the
  // grid merged them into these cells, e.g. pos nope-full of a full-attention cell stored as
  // pos nope).
  std::map<std::string, std::set<std::string>> aliases;
  std::vector<std::string> cell_ids;
  std::map<std::string, int> studies;  // the studies its cells come from, with their counts
  std::vector<CellSummary> cells;      // crossings in the spec's x: tokens or FLOPs
  std::vector<CellCost> costs;         // parallel to cells
  // Parallel to cells: the final value of the table's control_metric, when it has one.
  std::vector<std::optional<double>> controls;
  GroupSummary summary;                // order statistics: min and max (and the finals)
  Emergence emergence;                 // Kaplan-Meier: crossed k/n and the median the table reports
  MedianInterval median_interval;      // the median's interval at spec.level
  std::optional<Spread> final_spread;  // the final value over the cells
  std::optional<Spread> mean_log_spread;  // the mean over log tokens over the cells
  std::optional<Range> params;            // non-embedding parameters over the cells that know
  std::optional<Range> flops_per_token;   // training FLOPs per token likewise
  std::optional<double> control_median;
  bool has_baseline = false;
  size_t baseline_row = 0;  // the index of the baseline group, when has_baseline
  // baseline median / group median (emergence), on the spec's x; bounded where censored.
  SpeedUp speed_up;
  // baseline min / group max: at least 1 when every cell of the group crossed before every
  // cell of the baseline (its slowest seed against the baseline's fastest).
  SpeedUp seedwise;
  // With a baseline: the speed-up's percentile-bootstrap interval over both groups' seeds, and
  // the log-rank test of the two emergence curves.
  SpeedUpInterval speed_up_interval;
  LogRank logrank;
};

struct CompareTable {
  std::vector<std::string> by;   // resolved grouping axes, in order
  std::vector<CompareRow> rows;  // in the study's cell order of their first cell
  int cells_without_points = 0;  // cells that have not reported the metric yet
  int cells_without_flops = 0;   // XAxis::kFlops: cells left out, their FLOPs per token unknown
  // The control shown beside the metric (ControlMetrics: the first some grouped cell
  // reported); empty otherwise.
  std::string control_metric;
  // XAxis::kTokens: every eval point (tokens) some grouped cell has a value at, ascending;
  // what the table of crossings by eval point is read at.
  std::vector<int64_t> eval_points;
  // With spec.best_over: each group's choice, in the study's order.
  std::vector<BestOverChoice> choices;
};

// The NIAH controls that belong beside an accuracy, in order of preference: the key-swap rate
// (the same prompts asking another of their records' keys: how often the answer stays the
// same; a copier ~1, a matcher ~0) and then the distractor copy rate (studies measured before
// the key swap existed). For "niah/acc@L" the ones at that length; for any other "niah/acc..."
// metric (the headline, by depth, in or beyond the window) the summaries. Empty for other
// metrics.
std::vector<std::string> ControlMetrics(const std::string& metric);

// Groups the cells that reported spec.metric. A group's baseline is the group with the baseline
// value on the baseline axis and the same values on every other grouping axis, except axes that
// do not apply to it ("-", e.g. the window of a full-attention cell); a value the baseline
// group's cells stand for through merged schemes (CompareRow::aliases) matches too, but only
// when no group matches directly. None, or more than one, and the row has no baseline. The
// baseline's axis is made a grouping axis when `by` leaves it out. InvalidArgument-style
// problems (an unknown axis in `by` or the baseline) go to *error.
CompareTable Compare(const v1::GetStudyResponse& study, const Curves& curves,
                     const CompareSpec& spec, std::string* error);

// The table as JSON: a crossing is {"tokens": T} (or "flops" under XAxis::kFlops), with null
// for the value and "censored_below": B beside it when left-censored ("<= B"),
// "censored_above": B when right-censored ("> B"), neither when unknown.
std::string CompareJson(const CompareTable& table, const CompareSpec& spec);

}  // namespace onset::analysis
