// The confidence interval of a Kaplan-Meier median (survival.h): how sure a group's median
// tokens-to-threshold is, given how many seeds it has and how they were censored.
//
// Brookmeyer and Crowley's interval: every t whose survival S(t) is not significantly different
// from 1/2 at the level, found by inverting the pointwise confidence band of S. The band is
// Greenwood's variance on the log(-log) scale (Kalbfleisch and Prentice), which keeps it within
// [0, 1] and is what lifelines' KaplanMeierFitter draws:
//
//   V(t)      = sum over event times t_i <= t of d_i / (n_i (n_i - d_i))   (0 where n_i = d_i)
//   band(t)   = exp(-exp(log(-log S) -/+ z sqrt(V) / log S)),  z the two-sided normal quantile
//   lower end = the first event time where the band's lower edge is at or below 1/2
//   upper end = the first event time where the band's upper edge is at or below 1/2
//
// An end the band never reaches within what was observed is a bound, "> X" (kRight, X the
// largest time a cell was observed to), as the median itself is when fewer than half crossed:
// more seeds or larger budgets would be needed to close it. Crossings are counted as survival.h
// counts them: a left-censored crossing is an event at its bound, so an end at such a time is
// "<= t" (kLeft). The point median and the interval differ where S sits at exactly 1/2 (the
// median takes the geometric mean of the two event times, the interval the first).
// Pure functions: no I/O.
#pragma once

#include <vector>

#include "analysis/convergence.h"

namespace onset::analysis {

struct MedianInterval {
  double level = 0.95;
  Crossing lower{Crossing::kUnknown, 0};
  Crossing upper{Crossing::kUnknown, 0};
};

// The interval of the median of `crossings` at `level` (0 < level < 1; kUnknown entries are
// ignored). No cells: both ends kUnknown.
MedianInterval KaplanMeierMedianInterval(const std::vector<Crossing>& crossings, double level);

// The pointwise band the interval inverts, as the fraction emerged (1 - S) at each event time:
// what `onset plot --emergence` shades around each group's curve. Parallel to
// KaplanMeier(crossings).steps.
struct EmergedBand {
  double at = 0;
  double low = 0;   // 1 - the band's upper edge of S
  double high = 0;  // 1 - its lower edge
};
std::vector<EmergedBand> KaplanMeierBand(const std::vector<Crossing>& crossings, double level);

}  // namespace onset::analysis
