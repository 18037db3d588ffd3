// The log-rank test of two groups' emergence curves (survival.h): whether one group's cells
// cross the threshold sooner than the other's beyond what seed-to-seed variation explains,
// using every cell's crossing or censoring rather than the medians alone.
//
// At each distinct event time t of the pooled cells, with n_a, n_b at risk and d events of which
// d_a in group a: expected E_a += d n_a / n, variance V += n_a n_b d (n - d) / (n^2 (n - 1));
// the statistic (O_a - E_a)^2 / V is chi-square with 1 degree of freedom under the hypothesis
// that both groups emerge alike. Cells censored at t count as at risk at t (events first). A
// left-censored crossing is an event at its bound, as survival.h counts it (the test assumes
// the crossing happened there; with many left-censored cells it is only indicative).
// Pure functions: no I/O.
#pragma once

#include <vector>

#include "analysis/convergence.h"

namespace onset::analysis {

struct LogRank {
  bool defined = false;   // false when no cell crossed (V = 0): nothing to test
  double statistic = 0;   // chi-square, 1 degree of freedom
  double p_value = 1;     // P(chi2_1 >= statistic)
  double observed_a = 0;  // crossings in group a
  double expected_a = 0;  // expected under the hypothesis
};

LogRank LogRankTest(const std::vector<Crossing>& a, const std::vector<Crossing>& b);

}  // namespace onset::analysis
