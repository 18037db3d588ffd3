#include "analysis/logrank.h"

#include <map>

#include "analysis/normal_quantile.h"

namespace onset::analysis {

LogRank LogRankTest(const std::vector<Crossing>& a, const std::vector<Crossing>& b) {
  struct AtTime {
    int events[2] = {0, 0};
    int censored[2] = {0, 0};
  };
  std::map<double, AtTime> times;
  int at_risk[2] = {0, 0};
  const std::vector<Crossing>* groups[2] = {&a, &b};
  for (int g = 0; g < 2; ++g) {
    for (const Crossing& c : *groups[g]) {
      if (c.kind == Crossing::kUnknown) continue;
      ++at_risk[g];
      AtTime& t = times[c.at];
      (c.kind == Crossing::kRight ? t.censored : t.events)[g] += 1;
    }
  }
  LogRank out;
  double variance = 0;
  for (const auto& [at, t] : times) {
    const double n_a = at_risk[0], n_b = at_risk[1], n = n_a + n_b;
    const double d = t.events[0] + t.events[1];
    if (d > 0 && n > 0) {
      out.observed_a += t.events[0];
      out.expected_a += d * n_a / n;
      if (n > 1) variance += n_a * n_b * d * (n - d) / (n * n * (n - 1));
    }
    for (int g = 0; g < 2; ++g) at_risk[g] -= t.events[g] + t.censored[g];
  }
  if (variance > 0) {
    const double diff = out.observed_a - out.expected_a;
    out.defined = true;
    out.statistic = diff * diff / variance;
    out.p_value = ChiSquare1Tail(out.statistic);
  }
  return out;
}

}  // namespace onset::analysis
