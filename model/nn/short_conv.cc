#include "model/nn/short_conv.h"

#include <cmath>

#include "model/nn/fused_cpu_ops.h"

namespace onset::model {

ShortConvImpl::ShortConvImpl(int64_t channels, int64_t kernel) : kernel_(kernel) {
  TORCH_CHECK(kernel >= 1, "short convolution kernel must be >= 1, got ", kernel);
  // PyTorch's Conv1d default, U(-1/sqrt(K), 1/sqrt(K)) for a depthwise kernel, for a module used
  // on its own; the model re-initialises it as every matrix (short_conv.h).
  const double bound = 1.0 / std::sqrt(static_cast<double>(kernel));
  weight = register_parameter("weight", torch::rand({channels, kernel}) * (2 * bound) - bound);
}

at::Tensor ShortConvImpl::forward(const at::Tensor& x) {
  // One pass on the CPU; a depthwise conv1d and SiLU elsewhere (fused_cpu_ops.h).
  return ShortConvSilu(x, weight);  // (B, T, C)
}

at::Tensor ShortConvImpl::Prefill(const at::Tensor& x, at::Tensor* state) {
  const int64_t T = x.size(1), K = kernel_;
  // The last K - 1 inputs, zero-padded in front when the prompt is shorter.
  at::Tensor padded = at::constant_pad_nd(x, {0, 0, K - 1, 0});  // (B, T + K - 1, C)
  *state = padded.narrow(1, T, K - 1);                           // (B, K - 1, C)
  return forward(x);                                             // (B, T, C)
}

at::Tensor ShortConvImpl::Step(const at::Tensor& x, at::Tensor* state) {
  TORCH_CHECK(x.size(1) == 1, "ShortConv::Step takes one position, got ", x.size(1));
  at::Tensor window = at::cat({*state, x}, 1);                             // (B, K, C)
  at::Tensor w = weight.to(x.scalar_type()).transpose(0, 1).unsqueeze(0);  // (1, K, C)
  at::Tensor y = at::silu((window * w).sum(1, /*keepdim=*/true));          // (B, 1, C)
  *state = window.narrow(1, 1, kernel_ - 1);                               // (B, K - 1, C)
  return y;                                                                // (B, 1, C)
}

at::Tensor ReferenceShortConv(const at::Tensor& x, const at::Tensor& weight) {
  const int64_t T = x.size(1), K = weight.size(1);
  at::Tensor sum = at::zeros_like(x);  // (B, T, C)
  for (int64_t j = 0; j < K; ++j) {
    const int64_t lag = K - 1 - j;  // tap j reads position t - lag
    if (lag >= T) continue;
    at::Tensor shifted = at::constant_pad_nd(x.narrow(1, 0, T - lag), {0, 0, lag, 0});  // (B, T, C)
    sum = sum + shifted * weight.select(1, j);                                          // (B, T, C)
  }
  return at::silu(sum);  // (B, T, C)
}

}  // namespace onset::model
