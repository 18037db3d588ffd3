// A percentile-bootstrap interval for the speed-up of two groups' Kaplan-Meier medians
// (convergence.h SpeedUpOver, survival.h): how much the seeds' variation moves the ratio.
//
// Each resample draws every group's cells with replacement (as many as it has), takes both
// Kaplan-Meier medians and their speed-up; the interval is the (1 - level)/2 and 1 - (1 -
// level)/2 percentiles of the resampled speed-ups (index floor(m (1 - level)/2) and
// ceil(m (1 + level)/2) - 1 of the m sorted ones). A resample whose speed-up is only bounded
// (a median censored in it) counts at its bound, and an end that falls on one is shown as that
// bound; resamples where neither side is known are left out and counted, and when they are more
// than the tail (1 - level)/2 of all resamples the interval is unknown. The resampling is
// seeded (mt19937_64, index = draw mod n), so the same cells, seed and count give the same
// interval on every machine.
// Pure functions: no I/O.
#pragma once

#include <cstdint>
#include <vector>

#include "analysis/convergence.h"

namespace onset::analysis {

struct BootstrapOptions {
  int resamples = 2000;
  uint64_t seed = 1;
  double level = 0.95;
};

struct SpeedUpInterval {
  SpeedUp lower;  // kUnknown: not known (too many unknown resamples, or no cells)
  SpeedUp upper;
  int resamples = 0;  // drawn
  int bounded = 0;    // whose speed-up was only a bound
  int unknown = 0;    // left out: neither side known
};

// The interval of baseline median / group median over resamples of both groups' cells.
SpeedUpInterval BootstrapSpeedUp(const std::vector<Crossing>& group,
                                 const std::vector<Crossing>& baseline,
                                 const BootstrapOptions& options);

}  // namespace onset::analysis
