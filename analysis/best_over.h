// A stated rule for a nuisance axis (`onset compare --best-over AXIS --select METRIC[:RULE]`):
// architecture papers sweep the learning rate per architecture and compare each at its best, so
// the choice of "best" is made here by a rule fixed before looking, not by hand after.
//
// Within each group (the comparison's grouping axes, without AXIS and the seed), every value of
// AXIS is scored on the selection metric over the group's cells with that value:
//   min, max   the mean over those cells of the metric's final value; the lowest (highest) wins
//   crossing   the Kaplan-Meier median tokens until the metric reaches the comparison's
//              threshold (its direction: down for losses); the earliest wins, a censored median
//              ranking after every known one by its bound
// and only the cells of the winning value are compared. By default the selection metric is the
// held-out loss, not the metric being compared, so the choice does not favour the answer. With
// selection seeds, the choice is made on the cells of those seeds only, and the comparison uses
// the others only, so the selection is not scored on the data that chose it. Ties go to the
// value first in sort order; a value none of whose cells reported the selection metric is never
// chosen.
// Pure functions: no I/O.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "analysis/convergence.h"
#include "onset/v1/onset.pb.h"

namespace onset::analysis {

// cell id -> metric -> (tokens, value) points (as study_compare.h's Curves).
using SelectionCurves =
    std::map<std::string, std::map<std::string, std::vector<std::pair<int64_t, double>>>>;

struct BestOverSpec {
  std::string axis;  // empty: no selection
  std::string metric;
  enum class Rule { kMin, kMax, kCrossing } rule = Rule::kMin;
  std::set<std::string> selection_seeds;  // values of the seed axis; empty: every cell
};

// "min", "max", "crossing".
const char* RuleName(BestOverSpec::Rule rule);

struct BestOverChoice {
  std::map<std::string, std::string> group;  // the group's values of the other grouping axes
  std::string chosen;                        // AXIS's value compared; "" when none could be
  // Each value's score: the mean final value (min, max) or the median crossing's tokens
  // (crossing); nullopt when none of its selection cells reported the metric.
  std::map<std::string, std::optional<double>> scores;
  std::map<std::string, Crossing> medians;  // crossing: each value's median, bounds included
  int selection_cells = 0;                  // cells the choice was made on
};

// The study with only the cells the comparison keeps: in each group those with the chosen
// value of spec.axis, less the selection seeds' when there are any. `by`: the grouping axes
// (without spec.axis); `threshold`: the comparison's, for the crossing rule. The choices go to
// *choices, one per group in the study's order. *error for an axis the study does not have.
v1::GetStudyResponse SelectBest(const v1::GetStudyResponse& study, const SelectionCurves& curves,
                                const BestOverSpec& spec, const std::vector<std::string>& by,
                                double threshold, std::vector<BestOverChoice>* choices,
                                std::string* error);

}  // namespace onset::analysis
