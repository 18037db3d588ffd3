#include "analysis/median_interval.h"

#include <cmath>
#include <map>

#include "analysis/normal_quantile.h"

namespace onset::analysis {

namespace {

// The band at each event time: S's lower and upper edges and whether the time holds a
// left-censored crossing; `last_seen` gets the largest time any cell was observed to.
struct BandAt {
  double at = 0;
  double lower = 0, upper = 0;
  bool left = false;
};

std::vector<BandAt> Band(const std::vector<Crossing>& crossings, double level, int* n,
                         double* last_seen) {
  struct AtTime {
    int events = 0, left = 0, censored = 0;
  };
  std::map<double, AtTime> times;
  *n = 0;
  *last_seen = 0;
  for (const Crossing& c : crossings) {
    if (c.kind == Crossing::kUnknown) continue;
    ++*n;
    *last_seen = std::max(*last_seen, c.at);
    AtTime& t = times[c.at];
    if (c.kind == Crossing::kRight) {
      ++t.censored;
    } else {
      ++t.events;
      t.left += c.kind == Crossing::kLeft ? 1 : 0;
    }
  }
  std::vector<BandAt> out;
  const double z = TwoSidedZ(level);
  int at_risk = *n;
  double survival = 1, variance = 0;
  for (const auto& [at, t] : times) {
    if (t.events > 0) {
      survival *= 1.0 - static_cast<double>(t.events) / at_risk;
      if (at_risk > t.events) {
        variance += static_cast<double>(t.events) /
                    (static_cast<double>(at_risk) * static_cast<double>(at_risk - t.events));
      }
      BandAt b{at, 0, 0, t.left > 0};  // S = 0: the band is 0 too
      if (survival > 0) {
        const double log_s = std::log(survival);                // < 0
        const double spread = z * std::sqrt(variance) / log_s;  // <= 0
        b.upper = std::exp(-std::exp(std::log(-log_s) + spread));
        b.lower = std::exp(-std::exp(std::log(-log_s) - spread));
      }
      out.push_back(b);
    }
    at_risk -= t.events + t.censored;
  }
  return out;
}

}  // namespace

MedianInterval KaplanMeierMedianInterval(const std::vector<Crossing>& crossings, double level) {
  MedianInterval out;
  out.level = level;
  int n = 0;
  double last_seen = 0;
  const std::vector<BandAt> band = Band(crossings, level, &n, &last_seen);
  if (n == 0) return out;
  bool have_lower = false, have_upper = false;
  for (const BandAt& b : band) {
    const Crossing here{b.left ? Crossing::kLeft : Crossing::kExact, b.at};
    if (!have_lower && b.lower <= 0.5) {
      out.lower = here;
      have_lower = true;
    }
    if (!have_upper && b.upper <= 0.5) {
      out.upper = here;
      have_upper = true;
    }
  }
  if (!have_lower) out.lower = {Crossing::kRight, last_seen};
  if (!have_upper) out.upper = {Crossing::kRight, last_seen};
  return out;
}

std::vector<EmergedBand> KaplanMeierBand(const std::vector<Crossing>& crossings, double level) {
  int n = 0;
  double last_seen = 0;
  std::vector<EmergedBand> out;
  for (const BandAt& b : Band(crossings, level, &n, &last_seen)) {
    out.push_back({b.at, 1 - b.upper, 1 - b.lower});
  }
  return out;
}

}  // namespace onset::analysis
