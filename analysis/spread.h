// A number's spread over a group's seeds: mean, sample standard deviation, least and largest.
// Pure functions: no I/O.
#pragma once

#include <optional>
#include <vector>

namespace onset::analysis {

struct Spread {
  int n = 0;
  double mean = 0;
  double sd = 0;  // sample standard deviation (n - 1); 0 for one value
  double min = 0;
  double max = 0;
};

// nullopt for no values.
std::optional<Spread> SpreadOf(const std::vector<double>& values);

}  // namespace onset::analysis
