// AdamW with the parameter update of ATen's fused kernel (at::_fused_adamw_: one pass over each
// parameter's memory, vectorised on CPU, one launch per group on CUDA) instead of
// torch::optim::AdamW's loop of eight tensor ops per parameter. It is a torch::optim::AdamW:
// same options, same state (AdamWParamState: step, exp_avg, exp_avg_sq) and the same checkpoint
// format, so a checkpoint written by either loads into the other.
//
// The update is the same formula in another order of floating-point operations (exp_avg by a
// lerp, the denominator from sqrt(v) / sqrt(1 - beta2^t)), so parameters differ from
// torch::optim::AdamW's by rounding: a few ulps per step (docs/trainer.md states the tolerance
// the tests hold it to).
#pragma once

#include <unordered_map>
#include <vector>

#include <torch/optim/adamw.h>

namespace onset::model {

class FusedAdamW : public torch::optim::AdamW {
 public:
  using torch::optim::AdamW::AdamW;

  torch::Tensor step(LossClosure closure = nullptr) override;

 private:
  // Per parameter, its step count as the float tensor the kernel reads (AdamWParamState::step
  // stays the count of record).
  std::unordered_map<void*, at::Tensor> step_tensors_;
};

}  // namespace onset::model
