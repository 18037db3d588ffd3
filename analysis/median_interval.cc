#include "analysis/median_interval.h"

#include <cmath>
#include <map>

#include "analysis/normal_quantile.h"

namespace onset::analysis {

MedianInterval KaplanMeierMedianInterval(const std::vector<Crossing>& crossings, double level) {
  MedianInterval out;
  out.level = level;
  struct AtTime {
    int events = 0, left = 0, censored = 0;
  };
  std::map<double, AtTime> times;
  int n = 0;
  double last_seen = 0;
  for (const Crossing& c : crossings) {
    if (c.kind == Crossing::kUnknown) continue;
    ++n;
    last_seen = std::max(last_seen, c.at);
    AtTime& t = times[c.at];
    if (c.kind == Crossing::kRight) {
      ++t.censored;
    } else {
      ++t.events;
      t.left += c.kind == Crossing::kLeft ? 1 : 0;
    }
  }
  if (n == 0) return out;
  const double z = TwoSidedZ(level);
  int at_risk = n;
  double survival = 1, variance = 0;
  bool have_lower = false, have_upper = false;
  for (const auto& [at, t] : times) {
    if (t.events > 0) {
      survival *= 1.0 - static_cast<double>(t.events) / at_risk;
      if (at_risk > t.events) {
        variance += static_cast<double>(t.events) /
                    (static_cast<double>(at_risk) * static_cast<double>(at_risk - t.events));
      }
      double band_lower = 0, band_upper = 0;  // S = 0: the band is 0 too
      if (survival > 0) {
        const double log_s = std::log(survival);                // < 0
        const double spread = z * std::sqrt(variance) / log_s;  // <= 0
        band_upper = std::exp(-std::exp(std::log(-log_s) + spread));
        band_lower = std::exp(-std::exp(std::log(-log_s) - spread));
      }
      const Crossing here{t.left > 0 ? Crossing::kLeft : Crossing::kExact, at};
      if (!have_lower && band_lower <= 0.5) {
        out.lower = here;
        have_lower = true;
      }
      if (!have_upper && band_upper <= 0.5) {
        out.upper = here;
        have_upper = true;
      }
    }
    at_risk -= t.events + t.censored;
  }
  if (!have_lower) out.lower = {Crossing::kRight, last_seen};
  if (!have_upper) out.upper = {Crossing::kRight, last_seen};
  return out;
}

}  // namespace onset::analysis
