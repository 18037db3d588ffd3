// AdamW set up the way the study trains: two parameter groups, weight decay only on matrices
// that are not embeddings (norm gains, biases and embedding tables are not decayed).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <torch/nn/module.h>
#include <torch/optim/adamw.h>

#include "model/config/cell_config.h"

namespace onset::model {

struct ParamGroups {
  std::vector<at::Tensor> decay;
  std::vector<at::Tensor> no_decay;
  std::vector<std::string> decay_names;
  std::vector<std::string> no_decay_names;
};

// Splits parameters by name and rank: decayed iff rank >= 2, not an embedding table (wte,
// lm_head) and not a norm gain (any name containing "norm", e.g. the (2, 1, D) QK-norm gains).
ParamGroups SplitForWeightDecay(const torch::nn::Module& model);

// Group 0 = decayed, group 1 = not decayed. The learning rate starts at train.lr; the trainer
// overwrites it every step with SetLearningRate. The update is ATen's fused one (fused_adamw.h).
std::unique_ptr<torch::optim::AdamW> MakeAdamW(const torch::nn::Module& model,
                                               const TrainConfig& train);

void SetLearningRate(torch::optim::AdamW& optimizer, double lr);

}  // namespace onset::model
