// The threshold a comparison opens with when none is given (`onset compare` without
// --threshold, the dashboard's first view): 0.5 for a rate (an accuracy: a name whose part
// after a '/' starts with "acc", or that has "rate" in it), else halfway between the median
// first and the median last value of the cells' curves, to 3 significant digits, so that about
// half of the cells' runs cross it.
#pragma once

#include <optional>
#include <string>

#include "analysis/study_compare.h"

namespace onset::analysis {

struct DefaultThreshold {
  double value = 0;
  std::string why;  // "for a rate", "halfway between the cells' median first and last values"
};

// nullopt when no cell of `curves` has a finite value of `metric` (and it is not a rate).
std::optional<DefaultThreshold> ChooseThreshold(const std::string& metric, const Curves& curves);

}  // namespace onset::analysis
