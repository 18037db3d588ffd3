// Learning-rate schedules indexed by tokens seen (not steps), so cells with different batch
// sizes follow the same curve over the budget.
#pragma once

#include <cstdint>

#include "model/config/cell_config.h"

namespace onset::model {

// Both schedules warm up linearly from 0 to `peak` over `warmup` tokens and end at
// `min_ratio * peak` at `total` tokens (constant there beyond `total`).
//
//   kCosine: cosine decay from the end of warmup to `total`.
//   kWsd:    warmup-stable-decay (docs/science.md, "Token budgets and learning-rate
//            schedules"): constant `peak` until `decay_start`, then a decay to the floor at
//            `total` shaped by `shape` over progress p in [0, 1]:
//            kLinear 1 - p, kCosine (1 + cos(pi p)) / 2, kSqrt 1 - sqrt(p).
//
// The trainer evaluates it at the tokens count reached by the end of a step, so the first step
// of a run already has a non-zero rate. A WSD rate is exactly `peak` up to and including
// `decay_start`, whatever the floor: the step that ends there is trained at the rate of the stable
// phase, which a WSD trunk (model/config/wsd_trunk.h) shares with every budget.
struct LrSchedule {
  enum class Kind { kCosine, kWsd };
  enum class Shape { kLinear, kCosine, kSqrt };

  Kind kind = Kind::kCosine;
  double peak = 0;
  double min_ratio = 0;
  int64_t warmup = 0;
  int64_t total = 0;
  int64_t decay_start = 0;  // kWsd only: warmup <= decay_start < total
  Shape shape = Shape::kLinear;

  static LrSchedule FromConfig(const TrainConfig& train);
  // The WSD rate of `train` without its decay: the warmup, then `peak` for good (what a trunk
  // trains at; the budget, decay and floor mean nothing to it).
  static LrSchedule StablePhase(const TrainConfig& train);
  double At(int64_t tokens) const;
};

}  // namespace onset::model
