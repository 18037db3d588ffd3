// The short causal depthwise convolution that the reference recurrent layers put on q, k and v
// (Mamba-2; fla's ShortConvolution in its Gated DeltaNet and simple-GLA layers): every channel
// is convolved with its own kernel of K taps over the current and the K - 1 previous positions,
// then passed through SiLU:
//
//   y_t[c] = silu( sum_{j=0}^{K-1} w[c, j] x_{t-K+1+j}[c] ),   x_{t'} = 0 for t' < 0,
//
// so w[c, K-1] weighs the current position and w[c, 0] the oldest (PyTorch's Conv1d layout
// with K - 1 zeros of causal padding). It is what gives a layer the token one or two positions
// back, which key matching needs on both sides (docs/science.md, "What small models need").
// No bias (fla's default). Weights start as every other matrix of the model, N(0, init_std),
// as fla's models initialise their Conv1d (transformer.cc, InitWeights).
//
// Dimension letters: B batch, T positions, C channels (the q, k, v features it convolves),
// K kernel taps.
#pragma once

#include <cstdint>

#include <ATen/ATen.h>
#include <torch/nn/module.h>

namespace onset::model {

class ShortConvImpl : public torch::nn::Module {
 public:
  ShortConvImpl(int64_t channels, int64_t kernel);

  // x (B, T, C) -> (B, T, C), the positions before the first seen as zeros.
  at::Tensor forward(const at::Tensor& x);
  // As forward, and *state receives the last K - 1 inputs (zeros where the prompt is
  // shorter): (B, K - 1, C), what Step continues from.
  at::Tensor Prefill(const at::Tensor& x, at::Tensor* state);
  // One new position: x (B, 1, C) -> (B, 1, C); reads and advances *state (B, K - 1, C).
  // Equal (up to rounding) to the last row of forward over the whole sequence.
  at::Tensor Step(const at::Tensor& x, at::Tensor* state);

  int64_t kernel() const { return kernel_; }

  at::Tensor weight;  // (C, K): weight[c, K - 1] weighs the current position

 private:
  int64_t kernel_;
};
TORCH_MODULE(ShortConv);

// Plain reference: the sum above written tap by tap. x (B, T, C), weight (C, K) -> (B, T, C).
at::Tensor ReferenceShortConv(const at::Tensor& x, const at::Tensor& weight);

}  // namespace onset::model
