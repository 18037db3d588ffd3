// Quantiles of the standard normal and tail probabilities of the chi-square with one degree of
// freedom: what a confidence level and a log-rank statistic need, to full double precision.
// Pure functions.
#pragma once

namespace onset::analysis {

// The z with P(Z <= z) = p for a standard normal Z, 0 < p < 1 (NaN outside). Acklam's rational
// approximation refined by one Halley step on erfc: within a few ulps.
double NormalQuantile(double p);

// The z of a two-sided interval at `level` (0.95 -> 1.959963984540054).
double TwoSidedZ(double level);

// P(X > x) for X ~ chi-square with 1 degree of freedom (erfc(sqrt(x / 2))); 1 for x <= 0.
double ChiSquare1Tail(double x);

}  // namespace onset::analysis
