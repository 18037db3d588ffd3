#include "analysis/bootstrap.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "analysis/survival.h"

namespace onset::analysis {
namespace {

std::vector<Crossing> Known(const std::vector<Crossing>& crossings) {
  std::vector<Crossing> out;
  for (const Crossing& c : crossings) {
    if (c.kind != Crossing::kUnknown) out.push_back(c);
  }
  return out;
}

std::vector<Crossing> Resample(const std::vector<Crossing>& cells, std::mt19937_64& rng) {
  std::vector<Crossing> out;
  out.reserve(cells.size());
  for (size_t i = 0; i < cells.size(); ++i) out.push_back(cells[rng() % cells.size()]);
  return out;
}

}  // namespace

SpeedUpInterval BootstrapSpeedUp(const std::vector<Crossing>& group,
                                 const std::vector<Crossing>& baseline,
                                 const BootstrapOptions& options) {
  SpeedUpInterval out;
  const std::vector<Crossing> g = Known(group), b = Known(baseline);
  if (g.empty() || b.empty() || options.resamples <= 0) return out;
  std::mt19937_64 rng(options.seed);
  std::vector<SpeedUp> drawn;
  drawn.reserve(static_cast<size_t>(options.resamples));
  for (int r = 0; r < options.resamples; ++r) {
    // The group's cells first, then the baseline's, from one stream.
    const std::vector<Crossing> rg = Resample(g, rng);
    const std::vector<Crossing> rb = Resample(b, rng);
    const SpeedUp s = SpeedUpOver(KaplanMeier(rg).median, KaplanMeier(rb).median);
    if (s.kind == SpeedUp::kUnknown) {
      ++out.unknown;
      continue;
    }
    if (s.kind != SpeedUp::kExact) ++out.bounded;
    drawn.push_back(s);
  }
  out.resamples = options.resamples;
  const double tail = (1 - options.level) / 2;
  if (drawn.empty() || out.unknown > tail * options.resamples) return out;
  std::stable_sort(drawn.begin(), drawn.end(),
                   [](const SpeedUp& x, const SpeedUp& y) { return x.value < y.value; });
  const double m = static_cast<double>(drawn.size());
  const size_t lo = static_cast<size_t>(std::floor(m * tail));
  const size_t hi = static_cast<size_t>(std::max(0.0, std::ceil(m * (1 - tail)) - 1));
  out.lower = drawn[std::min(lo, drawn.size() - 1)];
  out.upper = drawn[std::min(hi, drawn.size() - 1)];
  return out;
}

}  // namespace onset::analysis
