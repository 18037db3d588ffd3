// `onset compare`: groups a study's cells (by the axes asked for, seeds aggregated), and per
// group computes tokens-to-threshold, the final value, the mean over log tokens and the speed-up
// against a baseline group (analysis/convergence.h). Pure: the study and its curves in, a table
// or JSON out.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "analysis/convergence.h"
#include "onset/v1/onset.pb.h"

namespace onset::cli {

// cell id -> metric -> (tokens, value) points.
using Curves = std::map<std::string, std::map<std::string, std::vector<std::pair<int64_t, double>>>>;

struct CompareSpec {
  std::string metric;
  double threshold = 0;
  analysis::Direction direction = analysis::Direction::kUp;
  std::vector<std::string> by;                  // empty: every display axis but seed
  std::pair<std::string, std::string> baseline;  // axis, value; empty axis: none
};

struct CompareRow {
  std::map<std::string, std::string> axes;  // the group's values of the `by` axes
  std::vector<std::string> cell_ids;
  std::vector<analysis::CellSummary> cells;
  analysis::GroupSummary summary;
  bool has_baseline = false;
  analysis::SpeedUp speed_up;
};

struct CompareTable {
  std::vector<std::string> by;  // resolved grouping axes, in order
  std::vector<CompareRow> rows;  // in the study's cell order of their first cell
  int cells_without_points = 0;  // cells that have not reported the metric yet
};

// InvalidArgument-style problems (an unknown axis in `by` or the baseline) go to *error.
CompareTable Compare(const v1::GetStudyResponse& study, const Curves& curves,
                     const CompareSpec& spec, std::string* error);

// "> 6M" for a censored crossing, "2.35M" otherwise.
std::string FormatCrossing(const analysis::Crossing& c);
std::string RenderCompare(const CompareTable& table, const CompareSpec& spec);
std::string CompareJson(const CompareTable& table, const CompareSpec& spec);

}  // namespace onset::cli
