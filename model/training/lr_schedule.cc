#include "model/training/lr_schedule.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace onset::model {

LrSchedule LrSchedule::FromConfig(const TrainConfig& train) {
  LrSchedule s;
  s.kind = train.schedule == "wsd" ? Kind::kWsd : Kind::kCosine;
  s.peak = train.lr;
  s.min_ratio = train.min_lr_ratio;
  s.warmup = train.resolved_warmup_tokens();
  s.total = train.tokens;
  s.decay_start = s.kind == Kind::kWsd ? train.wsd_decay_start() : s.warmup;
  s.shape = train.decay_shape == "cosine" ? Shape::kCosine
            : train.decay_shape == "sqrt" ? Shape::kSqrt
                                          : Shape::kLinear;
  return s;
}

LrSchedule LrSchedule::StablePhase(const TrainConfig& train) {
  LrSchedule s = FromConfig(train);
  s.kind = Kind::kWsd;
  s.total = std::numeric_limits<int64_t>::max();
  s.decay_start = s.total;
  return s;
}

double LrSchedule::At(int64_t tokens) const {
  if (tokens < warmup) return peak * static_cast<double>(tokens) / static_cast<double>(warmup);
  const double floor = min_ratio * peak;
  if (tokens >= total) return floor;
  // The cosine schedule is WSD with no stable phase and a cosine-shaped decay.
  const int64_t start = kind == Kind::kWsd ? decay_start : warmup;
  const Shape s = kind == Kind::kWsd ? shape : Shape::kCosine;
  // floor + (peak - floor) * 1 need not round to peak: the WSD decay starts after decay_start.
  if (tokens < start || (kind == Kind::kWsd && tokens == start)) return peak;
  if (total <= start) return floor;
  const double p = std::clamp(
      static_cast<double>(tokens - start) / static_cast<double>(total - start), 0.0, 1.0);
  const double remaining = s == Shape::kLinear   ? 1.0 - p
                           : s == Shape::kCosine ? 0.5 * (1.0 + std::cos(M_PI * p))
                                                 : 1.0 - std::sqrt(p);
  return floor + (peak - floor) * remaining;
}

}  // namespace onset::model
