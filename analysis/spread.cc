#include "analysis/spread.h"

#include <algorithm>
#include <cmath>

namespace onset::analysis {

std::optional<Spread> SpreadOf(const std::vector<double>& values) {
  if (values.empty()) return std::nullopt;
  Spread s;
  s.n = static_cast<int>(values.size());
  double sum = 0;
  for (double v : values) sum += v;
  s.mean = sum / s.n;
  double squares = 0;
  for (double v : values) squares += (v - s.mean) * (v - s.mean);
  s.sd = s.n > 1 ? std::sqrt(squares / (s.n - 1)) : 0;
  s.min = *std::min_element(values.begin(), values.end());
  s.max = *std::max_element(values.begin(), values.end());
  return s;
}

}  // namespace onset::analysis
