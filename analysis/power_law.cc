#include "analysis/power_law.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

namespace onset::analysis {
namespace {

struct Data {
  std::vector<double> x;  // D / D0
  std::vector<double> y;
};

// For a fixed beta, the least-squares E and B (linear in them) and the residual sum of squares.
struct Linear {
  double E = 0, B = 0, rss = std::numeric_limits<double>::infinity();
};

Linear SolveLinear(const Data& d, double beta) {
  const size_t n = d.x.size();
  double s_u = 0, s_uu = 0, s_y = 0, s_uy = 0;
  for (size_t i = 0; i < n; ++i) {
    const double u = std::pow(d.x[i], -beta);
    s_u += u;
    s_uu += u * u;
    s_y += d.y[i];
    s_uy += u * d.y[i];
  }
  const double det = n * s_uu - s_u * s_u;
  Linear l;
  if (std::abs(det) < 1e-300) return l;
  l.B = (n * s_uy - s_u * s_y) / det;
  l.E = (s_y - l.B * s_u) / n;
  l.rss = 0;
  for (size_t i = 0; i < n; ++i) {
    const double r = d.y[i] - (l.E + l.B * std::pow(d.x[i], -beta));
    l.rss += r * r;
  }
  return l;
}

// Inverse of a symmetric 3x3 matrix; false when singular.
bool Invert3(const double m[3][3], double out[3][3]) {
  const double det = m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1]) -
                     m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0]) +
                     m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0]);
  if (std::abs(det) < 1e-300) return false;
  out[0][0] = (m[1][1] * m[2][2] - m[1][2] * m[2][1]) / det;
  out[0][1] = (m[0][2] * m[2][1] - m[0][1] * m[2][2]) / det;
  out[0][2] = (m[0][1] * m[1][2] - m[0][2] * m[1][1]) / det;
  out[1][0] = (m[1][2] * m[2][0] - m[1][0] * m[2][2]) / det;
  out[1][1] = (m[0][0] * m[2][2] - m[0][2] * m[2][0]) / det;
  out[1][2] = (m[0][2] * m[1][0] - m[0][0] * m[1][2]) / det;
  out[2][0] = (m[1][0] * m[2][1] - m[1][1] * m[2][0]) / det;
  out[2][1] = (m[0][1] * m[2][0] - m[0][0] * m[2][1]) / det;
  out[2][2] = (m[0][0] * m[1][1] - m[0][1] * m[1][0]) / det;
  return true;
}

}  // namespace

std::optional<PowerLawFit> FitPowerLaw(const std::vector<Point>& points, int64_t min_tokens,
                                       std::string* problem) {
  std::vector<Point> kept;
  std::set<int64_t> distinct;
  for (const Point& p : points) {
    if (p.tokens > 0 && p.tokens >= min_tokens && std::isfinite(p.value)) {
      kept.push_back(p);
      distinct.insert(p.tokens);
    }
  }
  if (kept.size() < 3 || distinct.size() < 3) {
    *problem = "needs 3 or more points at 3 or more token counts, has " +
               std::to_string(kept.size()) + " at " + std::to_string(distinct.size());
    return std::nullopt;
  }
  double log_sum = 0;
  for (const Point& p : kept) log_sum += std::log(static_cast<double>(p.tokens));
  const double D0 = std::exp(log_sum / static_cast<double>(kept.size()));
  Data d;
  for (const Point& p : kept) {
    d.x.push_back(static_cast<double>(p.tokens) / D0);
    d.y.push_back(p.value);
  }

  // beta: the best of a log-spaced grid over [0.01, 3], then golden section around it.
  constexpr double kLo = 0.01, kHi = 3.0;
  constexpr int kGrid = 80;
  double best_beta = kLo, best_rss = std::numeric_limits<double>::infinity();
  std::vector<double> grid;
  for (int i = 0; i <= kGrid; ++i) grid.push_back(kLo * std::pow(kHi / kLo, double(i) / kGrid));
  for (double b : grid) {
    const double rss = SolveLinear(d, b).rss;
    if (rss < best_rss) best_rss = rss, best_beta = b;
  }
  const size_t at = std::find(grid.begin(), grid.end(), best_beta) - grid.begin();
  double a = grid[at == 0 ? 0 : at - 1], c = grid[std::min(at + 1, grid.size() - 1)];
  const double phi = (std::sqrt(5.0) - 1) / 2;
  double x1 = c - phi * (c - a), x2 = a + phi * (c - a);
  double f1 = SolveLinear(d, x1).rss, f2 = SolveLinear(d, x2).rss;
  for (int i = 0; i < 100 && c - a > 1e-10; ++i) {
    if (f1 < f2) {
      c = x2, x2 = x1, f2 = f1;
      x1 = c - phi * (c - a);
      f1 = SolveLinear(d, x1).rss;
    } else {
      a = x1, x1 = x2, f1 = f2;
      x2 = a + phi * (c - a);
      f2 = SolveLinear(d, x2).rss;
    }
  }
  const double beta = 0.5 * (a + c);
  const Linear l = SolveLinear(d, beta);

  PowerLawFit fit;
  fit.E = l.E;
  fit.B = l.B;
  fit.beta = beta;
  fit.D0 = D0;
  fit.points = static_cast<int>(kept.size());
  fit.rmse = std::sqrt(l.rss / static_cast<double>(kept.size()));
  // Standard errors: J = [1, x^-beta, -B x^-beta ln x] per point.
  double jtj[3][3] = {};
  for (double x : d.x) {
    const double u = std::pow(x, -beta);
    const double j[3] = {1.0, u, -l.B * u * std::log(x)};
    for (int r = 0; r < 3; ++r) {
      for (int s = 0; s < 3; ++s) jtj[r][s] += j[r] * j[s];
    }
  }
  double cov[3][3];
  const int dof = fit.points - 3;
  if (dof > 0 && Invert3(jtj, cov)) {
    const double sigma2 = l.rss / dof;
    fit.E_se = std::sqrt(std::max(0.0, sigma2 * cov[0][0]));
    fit.B_se = std::sqrt(std::max(0.0, sigma2 * cov[1][1]));
    fit.beta_se = std::sqrt(std::max(0.0, sigma2 * cov[2][2]));
  } else {
    fit.E_se = fit.B_se = fit.beta_se = std::numeric_limits<double>::quiet_NaN();
  }
  return fit;
}

}  // namespace onset::analysis
