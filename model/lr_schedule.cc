#include "model/lr_schedule.h"

#include <algorithm>
#include <cmath>

namespace onset::model {

CosineSchedule CosineSchedule::FromConfig(const TrainConfig& train) {
  return {train.lr, train.min_lr_ratio, train.resolved_warmup_tokens(), train.tokens};
}

double CosineSchedule::At(int64_t tokens) const {
  if (tokens < warmup) return peak * static_cast<double>(tokens) / static_cast<double>(warmup);
  const double floor = min_ratio * peak;
  if (tokens >= total || total <= warmup) return floor;
  const double progress = static_cast<double>(tokens - warmup) / static_cast<double>(total - warmup);
  return floor + 0.5 * (peak - floor) * (1.0 + std::cos(M_PI * std::clamp(progress, 0.0, 1.0)));
}

}  // namespace onset::model
