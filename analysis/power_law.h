// The short-context side of a comparison: how a loss falls with tokens, as the saturating power
// law L(D) = E + B (D / D0)^-beta (E the irreducible loss, beta the data exponent; D0 is the
// geometric mean of the fitted tokens, so B is the reducible loss there and stays well scaled).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "analysis/convergence.h"

namespace onset::analysis {

struct PowerLawFit {
  double E = 0, B = 0, beta = 0;
  double D0 = 0;
  // Standard errors from the least-squares covariance sigma^2 (J^T J)^-1, sigma^2 = RSS / (n - 3);
  // NaN with only 3 points (an exact fit has no error estimate).
  double E_se = 0, B_se = 0, beta_se = 0;
  double rmse = 0;
  int points = 0;
};

// Least squares over the finite points with tokens >= min_tokens (NaN and non-positive tokens
// are dropped). beta is searched in [0.01, 3]: on a log-spaced grid, then refined by golden
// section; E and B are solved exactly for each beta (variable projection). nullopt, with the
// reason in *problem, for fewer than 3 points or fewer than 3 distinct token counts.
std::optional<PowerLawFit> FitPowerLaw(const std::vector<Point>& points, int64_t min_tokens,
                                       std::string* problem);

}  // namespace onset::analysis
