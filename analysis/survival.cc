#include "analysis/survival.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace onset::analysis {

double Emergence::EmergedBy(double t) const {
  double emerged = 0;
  for (const EmergenceStep& s : steps) {
    if (s.at > t) break;
    emerged = s.emerged;
  }
  return emerged;
}

Emergence KaplanMeier(const std::vector<Crossing>& crossings) {
  Emergence e;
  struct AtTime {
    int events = 0, left = 0, censored = 0;
  };
  std::map<double, AtTime> times;
  for (const Crossing& c : crossings) {
    if (c.kind == Crossing::kUnknown) continue;
    ++e.n;
    AtTime& t = times[c.at];
    if (c.kind == Crossing::kRight) {
      ++t.censored;
      ++e.censored;
    } else {
      ++t.events;
      t.left += c.kind == Crossing::kLeft ? 1 : 0;
      ++e.crossed;
    }
  }
  int at_risk = e.n;
  double survival = 1.0;
  double last_censoring = 0;
  for (const auto& [at, t] : times) {
    if (t.censored > 0) last_censoring = at;
  }
  // The event at which S first reaches 1/2 or below, and whether it is exactly 1/2.
  bool found = false, half = false;
  double half_at = 0;
  bool half_left = false;
  for (const auto& [at, t] : times) {
    if (t.events > 0) {
      survival *= 1.0 - static_cast<double>(t.events) / at_risk;
      e.steps.push_back({at, at_risk, t.events, 1.0 - survival});
      const bool left = t.left > 0;
      if (half && !found) {
        // S sat at exactly 1/2 from half_at to this event.
        e.median = {half_left || left ? Crossing::kLeft : Crossing::kExact,
                    std::sqrt(half_at * at)};
        found = true;
      } else if (!found && survival < 0.5 - 1e-12) {
        e.median = {left ? Crossing::kLeft : Crossing::kExact, at};
        found = true;
      } else if (!found && std::abs(survival - 0.5) <= 1e-12) {
        half = true;
        half_at = at;
        half_left = left;
      }
    }
    at_risk -= t.events + t.censored;
  }
  if (!found) {
    if (half) {
      e.median = last_censoring > half_at
                     ? Crossing{Crossing::kRight, std::sqrt(half_at * last_censoring)}
                     : Crossing{Crossing::kUnknown, 0};
    } else if (e.n > 0) {
      e.median = {Crossing::kRight, last_censoring};
    } else {
      e.median = {Crossing::kUnknown, 0};
    }
  }
  return e;
}

CrossedBy CountCrossedBy(const std::vector<Crossing>& crossings, double t) {
  CrossedBy c;
  for (const Crossing& x : crossings) {
    if (x.kind == Crossing::kUnknown) continue;
    if (x.kind == Crossing::kRight) {
      if (x.at >= t) ++c.observed;
      continue;
    }
    // A left-censored crossing's bound is its cell's first eval point: nothing of it is known
    // before that.
    if (x.kind == Crossing::kLeft && x.at > t) continue;
    ++c.observed;
    if (x.at <= t) ++c.crossed;
  }
  return c;
}

}  // namespace onset::analysis
