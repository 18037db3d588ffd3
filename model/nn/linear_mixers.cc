#include "model/nn/linear_mixers.h"

#include <cmath>

#include <ATen/autocast_mode.h>

#include "model/nn/fused_cpu_ops.h"
#include "model/nn/gated_delta_net.h"
#include "model/nn/linear_attention.h"

namespace onset::model {
namespace {

constexpr double kGlaGateTemperature = 16.0;

// The kernels run in float32 whatever the surrounding autocast: the decays and the delta rule's
// triangular solve lose too much in bfloat16.
class NoAutocast {
 public:
  NoAutocast() : previous_(at::autocast::is_autocast_enabled(at::kCUDA)) {
    at::autocast::set_autocast_enabled(at::kCUDA, false);
  }
  ~NoAutocast() { at::autocast::set_autocast_enabled(at::kCUDA, previous_); }
  NoAutocast(const NoAutocast&) = delete;
  NoAutocast& operator=(const NoAutocast&) = delete;

 private:
  bool previous_;
};

torch::nn::Linear Projection(int64_t in, int64_t out) {
  return torch::nn::Linear(torch::nn::LinearOptions(in, out).bias(false));
}

// (B, T, H*D) -> (B, H, T, D) in float32.
at::Tensor Heads(const at::Tensor& x, int64_t H, int64_t D) {
  return x.reshape({x.size(0), x.size(1), H, D}).transpose(1, 2).to(at::kFloat);  // (B, H, T, D)
}

// (B, T, H) -> (B, H, T) in float32.
at::Tensor PerHead(const at::Tensor& x) { return x.transpose(1, 2).to(at::kFloat); }

at::Tensor L2Normalize(const at::Tensor& x) {
  return x * at::rsqrt((x * x).sum(-1, /*keepdim=*/true) + kNormEps);  // (..., D)
}

}  // namespace

RecurrentMixer::RecurrentMixer(const ModelConfig& config)
    : heads_(config.heads), head_dim_(config.head_dim()), chunk_(config.chunk_size) {}

at::Tensor RecurrentMixer::Convolve(const at::Tensor& qkv, Mode mode, LayerCache* cache) {
  if (!conv_) return qkv;  // (B, T, 3C)
  switch (mode) {
    case Mode::kStep:
      return conv_->Step(qkv, &cache->conv_state);  // (B, 1, 3C)
    case Mode::kPrefill:
      return conv_->Prefill(qkv, &cache->conv_state);  // (B, T, 3C)
    case Mode::kForward:
      break;
  }
  return conv_(qkv);  // (B, T, 3C)
}

at::Tensor RecurrentMixer::Output(const at::Tensor& y, const at::Tensor& gate,
                                  const at::Tensor& x) {
  const int64_t B = x.size(0), T = x.size(1), C = x.size(2);
  at::Tensor o;
  {
    NoAutocast fp32;
    o = RmsNorm(y.transpose(1, 2), head_norm_weight_, kNormEps);  // (B, T, H, D)
    o = MaskHeads(o, /*head_dim=*/2);                             // (B, T, H, D)
  }
  o = o.reshape({B, T, C}).to(x.scalar_type()) * at::silu(gate);  // (B, T, C)
  return out_(o);                                                 // (B, T, C)
}

at::Tensor RecurrentMixer::Forward(const at::Tensor& x, const MixerContext& /*ctx*/) {
  return Run(x, Mode::kForward, nullptr);  // (B, T, C)
}

at::Tensor RecurrentMixer::Prefill(const at::Tensor& x, const MixerContext& /*ctx*/,
                                   LayerCache* cache) {
  return Run(x, Mode::kPrefill, cache);  // (B, T, C)
}

at::Tensor RecurrentMixer::Step(const at::Tensor& x, const MixerContext& /*ctx*/,
                                LayerCache* cache) {
  return Run(x, Mode::kStep, cache);  // (B, 1, C)
}

LinearAttentionMixer::LinearAttentionMixer(const ModelConfig& config, int64_t short_conv)
    : RecurrentMixer(config) {
  const int64_t C = config.d_model;
  // q, k, v, output gate, then one gate logit per head.
  in_ = register_module("in_proj", Projection(C, 4 * C + heads_));
  out_ = register_module("out", Projection(C, C));
  head_norm_weight_ = register_parameter("head_norm_weight", torch::ones({head_dim_}));
  if (short_conv > 0) conv_ = register_module("conv", ShortConv(3 * C, short_conv));
}

at::Tensor LinearAttentionMixer::Run(const at::Tensor& x, Mode mode, LayerCache* cache) {
  const int64_t C = x.size(2), H = heads_, D = head_dim_;
  auto split = in_(x).split_with_sizes({3 * C, C, H}, -1);    // (B, T, 3C), (B, T, C), (B, T, H)
  auto parts = Convolve(split[0], mode, cache).chunk(3, -1);  // 3 x (B, T, C): q, k, v
  at::Tensor y;
  {
    NoAutocast fp32;
    const double scale = 1.0 / std::sqrt(static_cast<double>(D));
    at::Tensor q = L2Normalize(Heads(parts[0], H, D)) * scale;                // (B, H, T, D)
    at::Tensor k = L2Normalize(Heads(parts[1], H, D));                        // (B, H, T, D)
    at::Tensor v = Heads(parts[2], H, D);                                     // (B, H, T, D)
    at::Tensor g = at::log_sigmoid(PerHead(split[2])) / kGlaGateTemperature;  // (B, H, T)
    if (mode == Mode::kStep) {
      y = DecayedLinearAttentionStep(q.select(2, 0), k.select(2, 0), v.select(2, 0), g.select(2, 0),
                                     &cache->state)
              .unsqueeze(2);  // (B, H, 1, D)
    } else if (use_recurrent && mode == Mode::kForward) {
      y = DecayedLinearAttentionRecurrent(q, k, v, g);  // (B, H, T, D)
    } else {
      at::Tensor* final_state = mode == Mode::kPrefill ? &cache->state : nullptr;
      y = DecayedLinearAttentionChunked(q, k, v, g, chunk_, final_state);  // (B, H, T, D)
    }
  }
  return Output(y, split[1], x);  // (B, T, C)
}

GatedDeltaNetMixer::GatedDeltaNetMixer(const ModelConfig& config, int64_t short_conv)
    : RecurrentMixer(config) {
  const int64_t C = config.d_model, H = heads_;
  // q, k, v, output gate, then per head the beta logit and the decay input.
  in_ = register_module("in_proj", Projection(C, 4 * C + 2 * H));
  out_ = register_module("out", Projection(C, C));
  torch::NoGradGuard no_grad;
  // Mamba-2's initialisation: A ~ U[1, 16], dt log-uniform in [1e-3, 1e-1] through softplus.
  a_log_ = register_parameter("a_log", at::log(at::rand({H}) * 15.0 + 1.0));
  at::Tensor dt = at::exp(at::rand({H}) * (std::log(1e-1) - std::log(1e-3)) + std::log(1e-3));
  dt_bias_ = register_parameter("dt_bias", dt + at::log(-at::expm1(-dt)));  // softplus^-1(dt)
  head_norm_weight_ = register_parameter("head_norm_weight", torch::ones({head_dim_}));
  if (short_conv > 0) conv_ = register_module("conv", ShortConv(3 * C, short_conv));
}

at::Tensor GatedDeltaNetMixer::Run(const at::Tensor& x, Mode mode, LayerCache* cache) {
  const int64_t C = x.size(2), H = heads_, D = head_dim_;
  // (B, T, 3C): q, k, v; (B, T, C): the gate; 2 x (B, T, H): beta logit, decay input.
  auto split = in_(x).split_with_sizes({3 * C, C, H, H}, -1);
  auto parts = Convolve(split[0], mode, cache).chunk(3, -1);  // 3 x (B, T, C): q, k, v
  at::Tensor y;
  {
    NoAutocast fp32;
    const double scale = 1.0 / std::sqrt(static_cast<double>(D));
    at::Tensor q = L2Normalize(Heads(parts[0], H, D)) * scale;                 // (B, H, T, D)
    at::Tensor k = L2Normalize(Heads(parts[1], H, D));                         // (B, H, T, D)
    at::Tensor v = Heads(parts[2], H, D);                                      // (B, H, T, D)
    at::Tensor beta = at::sigmoid(PerHead(split[2]));                          // (B, H, T)
    at::Tensor dt = at::softplus(PerHead(split[3]) + dt_bias_.unsqueeze(-1));  // (B, H, T)
    at::Tensor g = -a_log_.exp().unsqueeze(-1) * dt;                           // (B, H, T)
    if (mode == Mode::kStep) {
      y = GatedDeltaNetStep(q.select(2, 0), k.select(2, 0), v.select(2, 0), g.select(2, 0),
                            beta.select(2, 0), &cache->state)
              .unsqueeze(2);  // (B, H, 1, D)
    } else if (use_recurrent && mode == Mode::kForward) {
      y = GatedDeltaNetRecurrent(q, k, v, g, beta);  // (B, H, T, D)
    } else {
      at::Tensor* final_state = mode == Mode::kPrefill ? &cache->state : nullptr;
      y = GatedDeltaNetChunked(q, k, v, g, beta, chunk_, final_state);  // (B, H, T, D)
    }
  }
  return Output(y, split[1], x);  // (B, T, C)
}

}  // namespace onset::model
