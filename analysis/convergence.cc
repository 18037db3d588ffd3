#include "analysis/convergence.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace onset::analysis {
namespace {

// Finite points with positive tokens, sorted by tokens (the last of equal tokens wins).
std::vector<Point> Clean(std::vector<Point> curve) {
  curve.erase(
      std::remove_if(curve.begin(), curve.end(),
                     [](const Point& p) { return !std::isfinite(p.value) || p.tokens <= 0; }),
      curve.end());
  std::stable_sort(curve.begin(), curve.end(),
                   [](const Point& a, const Point& b) { return a.tokens < b.tokens; });
  std::vector<Point> unique;
  for (const Point& p : curve) {
    if (!unique.empty() && unique.back().tokens == p.tokens) {
      unique.back() = p;
    } else {
      unique.push_back(p);
    }
  }
  return unique;
}

bool Crosses(double value, double threshold, Direction d) {
  return d == Direction::kUp ? value >= threshold : value <= threshold;
}

// Median of sorted values by the lower-middle rule for even counts averaged with the upper.
double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// A crossing as the interval its true value lies in: lo 0 is no bound below, hi infinity none
// above.
struct Bounds {
  double lo = 0;
  double hi = std::numeric_limits<double>::infinity();
};

Bounds BoundsOf(const Crossing& c) {
  switch (c.kind) {
    case Crossing::kExact:
      return {c.at, c.at};
    case Crossing::kLeft:
      return {0, c.at};
    case Crossing::kRight:
      return {c.at, std::numeric_limits<double>::infinity()};
    case Crossing::kUnknown:
      break;
  }
  return {};
}

// The three-valued report of an interval (convergence.h, GroupSummary).
Crossing FromBounds(const Bounds& b) {
  if (b.lo == b.hi) return {Crossing::kExact, b.lo};
  if (std::isfinite(b.hi)) return {Crossing::kLeft, b.hi};
  if (b.lo > 0) return {Crossing::kRight, b.lo};
  return {Crossing::kUnknown, 0};
}

}  // namespace

Direction DefaultDirection(const std::string& metric) {
  return metric.find("loss") != std::string::npos ? Direction::kDown : Direction::kUp;
}

Crossing TokensToThreshold(std::vector<Point> curve, double threshold, Direction direction,
                           int64_t budget) {
  curve = Clean(std::move(curve));
  for (size_t i = 0; i < curve.size(); ++i) {
    if (!Crosses(curve[i].value, threshold, direction)) continue;
    if (i == 0) return {Crossing::kLeft, static_cast<double>(curve[0].tokens)};
    const Point& a = curve[i - 1];
    const Point& b = curve[i];
    const double f = (threshold - a.value) / (b.value - a.value);  // in [0, 1]: a misses, b hits
    const double log_t =
        std::log(static_cast<double>(a.tokens)) +
        f * (std::log(static_cast<double>(b.tokens)) - std::log(static_cast<double>(a.tokens)));
    return {Crossing::kExact, std::exp(log_t)};
  }
  const double bound =
      std::max<double>(static_cast<double>(budget), curve.empty() ? 0.0 : curve.back().tokens);
  return {Crossing::kRight, bound};
}

std::optional<double> MeanOverLogTokens(std::vector<Point> curve) {
  curve = Clean(std::move(curve));
  if (curve.size() < 2) return std::nullopt;
  double area = 0;
  for (size_t i = 1; i < curve.size(); ++i) {
    const double dx = std::log(static_cast<double>(curve[i].tokens)) -
                      std::log(static_cast<double>(curve[i - 1].tokens));
    area += 0.5 * (curve[i].value + curve[i - 1].value) * dx;
  }
  const double span = std::log(static_cast<double>(curve.back().tokens)) -
                      std::log(static_cast<double>(curve.front().tokens));
  return area / span;
}

std::optional<double> FinalValue(std::vector<Point> curve) {
  curve = Clean(std::move(curve));
  if (curve.empty()) return std::nullopt;
  return curve.back().value;
}

GroupSummary Summarise(const std::vector<CellSummary>& cells) {
  GroupSummary g;
  g.n = static_cast<int>(cells.size());
  if (cells.empty()) return g;
  // The k-th smallest value lies between the k-th smallest lower end and the k-th smallest
  // upper end of the cells' intervals.
  std::vector<double> lows, highs;
  for (const CellSummary& c : cells) {
    const Bounds b = BoundsOf(c.crossing);
    lows.push_back(b.lo);
    highs.push_back(b.hi);
    g.left_censored += c.crossing.kind == Crossing::kLeft ? 1 : 0;
    g.censored += c.crossing.kind == Crossing::kRight ? 1 : 0;
  }
  std::sort(lows.begin(), lows.end());
  std::sort(highs.begin(), highs.end());
  const size_t n = lows.size();
  g.min = FromBounds({lows.front(), highs.front()});
  g.max = FromBounds({lows.back(), highs.back()});
  if (n % 2) {
    g.median = FromBounds({lows[n / 2], highs[n / 2]});
  } else {
    // The geometric mean of the middle two (tokens compare on a log scale), end by end: 0 and
    // infinity stay what they are (no upper end is 0, no lower end infinite).
    g.median = FromBounds(
        {std::sqrt(lows[n / 2 - 1] * lows[n / 2]), std::sqrt(highs[n / 2 - 1] * highs[n / 2])});
  }
  std::vector<double> finals, means;
  for (const CellSummary& c : cells) {
    if (c.final_value) finals.push_back(*c.final_value);
    if (c.mean_log) means.push_back(*c.mean_log);
  }
  if (!finals.empty()) g.final_median = Median(finals);
  if (!means.empty()) g.mean_log_median = Median(means);
  return g;
}

SpeedUp SpeedUpOver(const Crossing& group, const Crossing& baseline) {
  if (group.kind == Crossing::kUnknown || baseline.kind == Crossing::kUnknown || !(group.at > 0) ||
      !(baseline.at > 0)) {
    return {SpeedUp::kUnknown, 0};
  }
  const double ratio = baseline.at / group.at;
  // The true ratio is at least b/g when the group needed at most g (exact or left-censored) and
  // the baseline at least b (exact or right-censored); at most b/g the other way round.
  const bool at_least = group.kind != Crossing::kRight && baseline.kind != Crossing::kLeft;
  const bool at_most = group.kind != Crossing::kLeft && baseline.kind != Crossing::kRight;
  if (at_least && at_most) return {SpeedUp::kExact, ratio};
  if (at_least) return {SpeedUp::kAtLeast, ratio};
  if (at_most) return {SpeedUp::kAtMost, ratio};
  return {SpeedUp::kUnknown, 0};
}

}  // namespace onset::analysis
