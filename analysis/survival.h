// Emergence across seeds as a survival curve (docs/metrics.md, "Emergence across seeds"). At
// small scale a capability emerges as a phase change whose timing varies with the seed far
// more than with the variant, so a group's answer is the distribution of its seeds' crossings,
// not one seed's. The Kaplan-Meier estimator gives it with censoring handled as the data says:
//
//   each cell's crossing (convergence.h) is an event at `at` (exact, or left-censored: crossed
//   at or before `at`, an event time that is an upper bound), or right-censored at `at` (not
//   crossed within `at`: it leaves the risk set there, counting as not yet crossed until then);
//   S(t) = prod over event times t_i <= t of (1 - d_i / n_i), d_i events among the n_i cells
//   still at risk just before t_i (cells censored at t_i count as at risk: events first);
//   the fraction emerged by t is 1 - S(t).
//
// The median tokens-to-threshold is the first event time at which S falls below 1/2; where S
// sits exactly at 1/2 up to a later event, the geometric mean of the two event times (tokens
// compare on a log scale); reported as
//   exact                 an exact crossing time;
//   "<= X" (left)         the time is the bound of a left-censored crossing (it was there by X);
//   "> X" (right)         fewer than half the cells crossed within what was observed (X: the
//                         largest right-censoring time; at exactly 1/2, the geometric mean of
//                         the last event and that time);
// With every cell censored at the same budget, the median is the order-statistic median of
// convergence.h's Summarise; the estimator matters when cells are censored at different token
// counts (unfinished cells, budgets of their own).
// Pure functions: no I/O.
#pragma once

#include <vector>

#include "analysis/convergence.h"

namespace onset::analysis {

struct EmergenceStep {
  double at = 0;       // an event time
  int at_risk = 0;     // cells neither crossed nor censored before it
  int events = 0;      // crossings at it
  double emerged = 0;  // 1 - S(at), the Kaplan-Meier fraction emerged by it
};

struct Emergence {
  int n = 0;                         // cells
  int crossed = 0;                   // of which crossed (exact or left-censored): the k of "k/n"
  int censored = 0;                  // of which right-censored
  std::vector<EmergenceStep> steps;  // one per distinct event time, in order
  Crossing median;

  // The Kaplan-Meier fraction emerged by `t`: 0 before the first event time.
  double EmergedBy(double t) const;
};

// Kaplan-Meier over the crossings of one group's cells (kUnknown entries are ignored).
Emergence KaplanMeier(const std::vector<Crossing>& crossings);

// How many cells had crossed by `t` (an exact crossing at or before t, a left-censored one
// whose bound is at or before t) and how many were observed through `t` (not right-censored
// before t, and for a left-censored one not before its bound, its first eval point): the
// "k/n" of a table of eval points.
struct CrossedBy {
  int crossed = 0;
  int observed = 0;
};
CrossedBy CountCrossedBy(const std::vector<Crossing>& crossings, double t);

}  // namespace onset::analysis
