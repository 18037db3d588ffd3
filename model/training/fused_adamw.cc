#include "model/training/fused_adamw.h"

#include <ATen/ops/_fused_adamw.h>
#include <torch/autograd.h>

namespace onset::model {

torch::Tensor FusedAdamW::step(LossClosure closure) {
  at::NoGradGuard no_grad;
  torch::Tensor loss = {};
  if (closure != nullptr) {
    at::AutoGradMode enable_grad(true);
    loss = closure();
  }
  for (auto& group : param_groups()) {
    const auto& options = static_cast<const torch::optim::AdamWOptions&>(group.options());
    std::vector<at::Tensor> params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps;
    for (at::Tensor& p : group.params()) {
      if (!p.grad().defined()) continue;
      TORCH_CHECK(!p.grad().is_sparse(), "FusedAdamW: sparse gradients are not supported");
      void* key = p.unsafeGetTensorImpl();
      auto& slot = state()[key];
      if (slot == nullptr) {
        auto fresh = std::make_unique<torch::optim::AdamWParamState>();
        fresh->step(0);
        fresh->exp_avg(at::zeros_like(p, at::MemoryFormat::Preserve));
        fresh->exp_avg_sq(at::zeros_like(p, at::MemoryFormat::Preserve));
        if (options.amsgrad()) {
          fresh->max_exp_avg_sq(at::zeros_like(p, at::MemoryFormat::Preserve));
        }
        slot = std::move(fresh);
      }
      auto& s = static_cast<torch::optim::AdamWParamState&>(*slot);
      s.step(s.step() + 1);
      at::Tensor& count = step_tensors_[key];
      if (!count.defined() || count.device() != p.device()) {
        count = at::empty({}, p.options().dtype(at::kFloat));
      }
      if (count.is_cpu()) {
        *count.data_ptr<float>() = static_cast<float>(s.step());
      } else {
        count.fill_(static_cast<double>(s.step()));
      }
      params.push_back(p);
      grads.push_back(p.grad());
      exp_avgs.push_back(s.exp_avg());
      exp_avg_sqs.push_back(s.exp_avg_sq());
      if (options.amsgrad()) max_exp_avg_sqs.push_back(s.max_exp_avg_sq());
      steps.push_back(count);
    }
    if (params.empty()) continue;
    at::_fused_adamw_(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps, options.lr(),
                      std::get<0>(options.betas()), std::get<1>(options.betas()),
                      options.weight_decay(), options.eps(), options.amsgrad(),
                      /*maximize=*/false);
  }
  return loss;
}

}  // namespace onset::model
