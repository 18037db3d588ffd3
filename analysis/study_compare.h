// Comparing a study's cells (`onset compare`, the dashboard): cells grouped by the axes asked
// for (seeds aggregated), per group tokens-to-threshold, the final value, the mean over log
// tokens, and the speed-up against a baseline group (convergence.h). Pure: the study and its
// curves in, the table or its JSON out.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "analysis/convergence.h"
#include "onset/v1/onset.pb.h"

namespace onset::analysis {

// cell id -> metric -> (tokens, value) points.
using Curves =
    std::map<std::string, std::map<std::string, std::vector<std::pair<int64_t, double>>>>;

struct CompareSpec {
  std::string metric;
  double threshold = 0;
  Direction direction = Direction::kUp;
  std::vector<std::string> by;                   // empty: every display axis but seed
  std::pair<std::string, std::string> baseline;  // axis, value; empty axis: none
};

struct CompareRow {
  std::map<std::string, std::string> axes;  // the group's values of the `by` axes
  std::vector<std::string> cell_ids;
  std::vector<CellSummary> cells;
  GroupSummary summary;
  bool has_baseline = false;
  SpeedUp speed_up;
};

struct CompareTable {
  std::vector<std::string> by;   // resolved grouping axes, in order
  std::vector<CompareRow> rows;  // in the study's cell order of their first cell
  int cells_without_points = 0;  // cells that have not reported the metric yet
};

// InvalidArgument-style problems (an unknown axis in `by` or the baseline) go to *error.
CompareTable Compare(const v1::GetStudyResponse& study, const Curves& curves,
                     const CompareSpec& spec, std::string* error);

std::string CompareJson(const CompareTable& table, const CompareSpec& spec);

}  // namespace onset::analysis
