#include "model/training/optimizer.h"

#include "model/training/fused_adamw.h"

namespace onset::model {
namespace {

bool IsEmbedding(const std::string& name) {
  return name.rfind("wte.", 0) == 0 || name.rfind("lm_head.", 0) == 0;
}

}  // namespace

ParamGroups SplitForWeightDecay(const torch::nn::Module& model) {
  ParamGroups groups;
  for (const auto& p : model.named_parameters()) {
    if (!p.value().requires_grad()) continue;
    if (p.value().dim() >= 2 && !IsEmbedding(p.key()) &&
        p.key().find("norm") == std::string::npos) {
      groups.decay.push_back(p.value());
      groups.decay_names.push_back(p.key());
    } else {
      groups.no_decay.push_back(p.value());
      groups.no_decay_names.push_back(p.key());
    }
  }
  return groups;
}

std::unique_ptr<torch::optim::AdamW> MakeAdamW(const torch::nn::Module& model,
                                               const TrainConfig& train) {
  ParamGroups groups = SplitForWeightDecay(model);
  auto options = [&](double weight_decay) {
    auto o = std::make_unique<torch::optim::AdamWOptions>(train.lr);
    o->betas({train.beta1, train.beta2}).eps(1e-8).weight_decay(weight_decay);
    return o;
  };
  std::vector<torch::optim::OptimizerParamGroup> param_groups;
  param_groups.emplace_back(groups.decay, options(train.weight_decay));
  param_groups.emplace_back(groups.no_decay, options(0.0));
  return std::make_unique<FusedAdamW>(param_groups, torch::optim::AdamWOptions(train.lr));
}

void SetLearningRate(torch::optim::AdamW& optimizer, double lr) {
  for (auto& group : optimizer.param_groups()) {
    static_cast<torch::optim::AdamWOptions&>(group.options()).lr(lr);
  }
}

}  // namespace onset::model
