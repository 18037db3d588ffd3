// The parameters of a comparison as text, the way `onset compare` and `onset plot` take them as
// flags and the dashboard's /compare takes them as a query, read into a CompareSpec by one
// parser, so that every front end accepts and refuses the same things with the same words.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "analysis/study_compare.h"

namespace onset::analysis {

struct CompareParams {
  std::string metric;                // any metric name the trainer reports; required
  std::string threshold;             // a finite number; empty: none given
  std::string direction = "auto";    // auto (down for losses, else up), up or down
  std::string x = "tokens";          // tokens or flops
  std::string by;                    // comma-separated axes; empty: every axis but seed
  std::string baseline;              // AXIS=VALUE, both non-empty; empty: none
  std::string level = "0.95";        // of the intervals: a number in [0.5, 0.999]
  std::string bootstrap = "2000";    // the speed-up's resamples: an integer in [100, 100000]
  std::string bootstrap_seed = "1";  // the resampling's seed: an unsigned integer
  std::string best_over;             // an axis chosen per group (best_over.h); empty: none
  std::string select;                // METRIC[:min|max|crossing]; empty: eval/heldout_loss:min
  std::string select_on_seeds;       // comma-separated seed values; empty: every cell
};

// The spec of `params`. `threshold_required`: a comparison needs one (a plot does not; without
// one its threshold is 0 and unused). Errors: InvalidArgument naming the parameter, what it must
// be and what it got, e.g. "direction: must be auto, up or down, got 'sideways'" (a flag's
// caller puts "--" before it).
absl::StatusOr<CompareSpec> ParseCompareParams(const CompareParams& params,
                                               bool threshold_required);

}  // namespace onset::analysis
