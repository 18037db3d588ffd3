// Learning-rate schedule indexed by tokens seen (not steps), so cells with different batch
// sizes follow the same curve over the budget.
#pragma once

#include <cstdint>

#include "model/cell_config.h"

namespace onset::model {

// Linear warmup from 0 to `peak` over `warmup` tokens, then cosine decay to
// `min_ratio * peak` at `total` tokens; constant at the floor beyond `total`. The trainer
// evaluates it at the tokens count reached by the end of a step, so the first step of a run
// already has a non-zero rate.
struct CosineSchedule {
  double peak = 0;
  double min_ratio = 0;
  int64_t warmup = 0;
  int64_t total = 0;

  static CosineSchedule FromConfig(const TrainConfig& train);
  double At(int64_t tokens) const;
};

}  // namespace onset::model
