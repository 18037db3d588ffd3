// A short training run of a model for the CPU kernels' tests: the losses of `steps` AdamW steps
// on random tokens, the same seeds every call, so that two runs differ only by what the caller
// switched between them (a kernel, an attention backend).
#pragma once

#include <ATen/ATen.h>
#include <torch/optim/adamw.h>

#include <cstdint>
#include <vector>

#include "model/config/cell_config.h"
#include "model/nn/transformer.h"

namespace onset::model {

// `batch` sequences of model.seq_len tokens of ids below 64 a step, lr 3e-3.
inline std::vector<double> ShortTrainingRunLosses(const ModelConfig& model_config, int64_t batch,
                                                  int steps = 40) {
  const int64_t T = model_config.seq_len;
  torch::manual_seed(3);
  Transformer model(model_config);
  torch::optim::AdamW optimizer(model->parameters(), torch::optim::AdamWOptions(3e-3));
  at::manual_seed(4);
  std::vector<double> losses;
  for (int step = 0; step < steps; ++step) {
    at::Tensor tokens = at::randint(0, 64, {batch, T + 1}, at::kLong);  // (batch, T + 1)
    optimizer.zero_grad();
    at::Tensor logits = model(tokens.narrow(1, 0, T));  // (batch, T, V)
    at::Tensor loss = at::cross_entropy_loss(logits.reshape({-1, logits.size(-1)}),
                                             tokens.narrow(1, 1, T).reshape({-1}));
    loss.backward();
    optimizer.step();
    losses.push_back(loss.item<double>());
  }
  return losses;
}

}  // namespace onset::model
