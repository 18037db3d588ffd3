#include "analysis/convergence.h"

#include <algorithm>
#include <cmath>

namespace onset::analysis {
namespace {

// Finite points with positive tokens, sorted by tokens (the last of equal tokens wins).
std::vector<Point> Clean(std::vector<Point> curve) {
  curve.erase(std::remove_if(curve.begin(), curve.end(),
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

}  // namespace

Direction DefaultDirection(const std::string& metric) {
  return metric.find("loss") != std::string::npos ? Direction::kDown : Direction::kUp;
}

Crossing TokensToThreshold(std::vector<Point> curve, double threshold, Direction direction,
                           int64_t budget) {
  curve = Clean(std::move(curve));
  for (size_t i = 0; i < curve.size(); ++i) {
    if (!Crosses(curve[i].value, threshold, direction)) continue;
    if (i == 0) return {true, static_cast<double>(curve[0].tokens)};
    const Point& a = curve[i - 1];
    const Point& b = curve[i];
    const double f = (threshold - a.value) / (b.value - a.value);  // in [0, 1]: a misses, b hits
    const double log_t = std::log(static_cast<double>(a.tokens)) +
                         f * (std::log(static_cast<double>(b.tokens)) -
                              std::log(static_cast<double>(a.tokens)));
    return {true, std::exp(log_t)};
  }
  const double bound =
      std::max<double>(static_cast<double>(budget), curve.empty() ? 0.0 : curve.back().tokens);
  return {false, bound};
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
  // Order: crossings by tokens, then censored cells by their bound (all larger than any
  // crossing: a cell that did not cross by its budget may cross anywhere later).
  std::vector<Crossing> order;
  for (const CellSummary& c : cells) order.push_back(c.crossing);
  std::sort(order.begin(), order.end(), [](const Crossing& a, const Crossing& b) {
    if (a.crossed != b.crossed) return a.crossed;
    return a.tokens < b.tokens;
  });
  for (const Crossing& c : order) g.censored += c.crossed ? 0 : 1;
  g.min = order.front();
  g.max = order.back();
  const size_t n = order.size();
  if (n % 2) {
    g.median = order[n / 2];
  } else {
    const Crossing& lo = order[n / 2 - 1];
    const Crossing& hi = order[n / 2];
    if (lo.crossed && hi.crossed) {
      // The geometric mean: tokens are compared on a log scale.
      g.median = {true, std::sqrt(lo.tokens * hi.tokens)};
    } else {
      g.median = lo.crossed ? hi : lo;  // at least one side censored: the median is too
    }
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
  if (group.crossed && baseline.crossed) return {SpeedUp::kExact, baseline.tokens / group.tokens};
  if (baseline.crossed) return {SpeedUp::kAtMost, baseline.tokens / group.tokens};
  if (group.crossed) return {SpeedUp::kAtLeast, baseline.tokens / group.tokens};
  return {SpeedUp::kUnknown, 0};
}

}  // namespace onset::analysis
