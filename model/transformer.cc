#include "model/transformer.h"

#include <cmath>
#include <string>

#include <torch/nn/init.h>

#include "model/attention.h"
#include "model/linear_mixers.h"
#include "model/vocab.h"

namespace onset::model {

RMSNormImpl::RMSNormImpl(int64_t dim, double eps) : eps_(eps) {
  weight = register_parameter("weight", torch::ones({dim}));
}

at::Tensor RMSNormImpl::forward(const at::Tensor& x) {
  // x * rsqrt(mean(x^2) + eps) * weight, as one ATen op (fused kernels where available).
  return at::rms_norm(x, {weight.size(0)}, weight.to(x.scalar_type()), eps_);  // (..., dim)
}

AttentionMixer::AttentionMixer(const ModelConfig& config, int64_t window, bool use_rope)
    : heads_(config.heads),
      kv_heads_(config.resolved_kv_heads()),
      head_dim_(config.head_dim()),
      window_(window),
      use_rope_(use_rope) {
  const int64_t C = config.d_model, QKV = (heads_ + 2 * kv_heads_) * head_dim_;
  qkv_ = register_module("qkv", torch::nn::Linear(torch::nn::LinearOptions(C, QKV).bias(false)));
  out_ = register_module("out", torch::nn::Linear(torch::nn::LinearOptions(C, C).bias(false)));
  if (config.qk_norm) {
    qk_norm_weight_ = register_parameter("qk_norm_weight", torch::ones({2, 1, head_dim_}));
  }
}

at::Tensor AttentionMixer::Forward(const at::Tensor& x, const MixerContext& ctx) {
  const int64_t B = x.size(0), T = x.size(1), H = heads_, G = kv_heads_, D = head_dim_;
  // Queries and keys travel together through QK-norm and RoPE: half the elementwise ops.
  auto parts = qkv_(x).view({B, T, H + 2 * G, D}).split_with_sizes({H + G, G}, 2);
  at::Tensor qk = parts[0];                   // (B, T, H+G, D)
  at::Tensor v = parts[1].transpose(1, 2);    // (B, G, T, D)
  if (qk_norm_weight_.defined()) {
    qk = at::rms_norm(qk, {D}, std::nullopt, kNormEps);  // (B, T, H+G, D)
    at::Tensor w = qk_norm_weight_.to(qk.scalar_type());                      // (2, 1, D)
    at::Tensor gains = at::cat({w[0].expand({H, D}), w[1].expand({G, D})});  // (H+G, D)
    qk = qk * gains;                                                          // (B, T, H+G, D)
  }
  if (use_rope_) qk = ApplyRope(qk, *ctx.rope, /*time_dim=*/1);  // (B, T, H+G, D)
  at::Tensor q = qk.narrow(2, 0, H).transpose(1, 2);             // (B, H, T, D)
  at::Tensor k = qk.narrow(2, H, G).transpose(1, 2);             // (B, G, T, D)
  k = RepeatKv(k, H / G);                                        // (B, H, T, D)
  v = RepeatKv(v, H / G);                                        // (B, H, T, D)
  at::Tensor y = CausalAttention(q, k, v, window_);              // (B, H, T, D)
  y = y.transpose(1, 2).reshape({B, T, H * D});                  // (B, T, C)
  return out_(y);                                                // (B, T, C)
}

std::shared_ptr<Mixer> MakeMixer(const ModelConfig& config, int layer) {
  const char kind = config.pattern.at(layer);
  const bool rope = config.LayerUsesRope(layer);
  if (kind == kFullAttention) return std::make_shared<AttentionMixer>(config, 0, rope);
  if (kind == kSlidingWindow) return std::make_shared<AttentionMixer>(config, config.window, rope);
  if (kind == kLinearAttention) return std::make_shared<LinearAttentionMixer>(config);
  if (kind == kGatedDeltaNet) return std::make_shared<GatedDeltaNetMixer>(config);
  TORCH_CHECK(false, "layer ", layer, ": unknown mixer '", kind, "'");
}

SwiGluImpl::SwiGluImpl(int64_t d_model, int64_t hidden) {
  auto linear = [](int64_t in, int64_t out) {
    return torch::nn::Linear(torch::nn::LinearOptions(in, out).bias(false));
  };
  // The gate and up projections as one matrix: one matmul instead of two.
  gate_up_ = register_module("gate_up", linear(d_model, 2 * hidden));
  down_ = register_module("down", linear(hidden, d_model));
}

at::Tensor SwiGluImpl::forward(const at::Tensor& x) {
  auto gate_up = gate_up_(x).chunk(2, -1);    // 2 x (B, T, F)
  at::Tensor h = at::silu(gate_up[0]) * gate_up[1];  // (B, T, F)
  return down_(h);                                   // (B, T, C)
}

BlockImpl::BlockImpl(const ModelConfig& config, int layer) {
  norm1_ = register_module("norm1", RMSNorm(config.d_model));
  mixer_ = register_module("mixer", MakeMixer(config, layer));
  norm2_ = register_module("norm2", RMSNorm(config.d_model));
  mlp_ = register_module("mlp", SwiGlu(config.d_model, config.resolved_mlp_hidden()));
}

at::Tensor BlockImpl::forward(const at::Tensor& x, const MixerContext& ctx) {
  at::Tensor h = x + mixer_->Forward(norm1_(x), ctx);  // (B, T, C)
  return h + mlp_(norm2_(h));                         // (B, T, C)
}

TransformerImpl::TransformerImpl(const ModelConfig& config) : config_(config) {
  wte_ = register_module("wte", torch::nn::Embedding(kVocabSize, config.d_model));
  for (int i = 0; i < config.layers; ++i) {
    blocks_.push_back(register_module("h" + std::to_string(i), Block(config, i)));
  }
  norm_f_ = register_module("norm_f", RMSNorm(config.d_model));
  if (!config.tie_embeddings) {
    lm_head_ = register_module(
        "lm_head", torch::nn::Linear(torch::nn::LinearOptions(config.d_model, kVocabSize).bias(false)));
  }
  InitWeights();
}

void TransformerImpl::InitWeights() {
  // GPT-2 style: N(0, init_std) for matrices, with the projections that write into the
  // residual stream scaled by 1 / sqrt(2 * layers); norms start at 1.
  torch::NoGradGuard no_grad;
  const double residual_std = config_.init_std / std::sqrt(2.0 * config_.layers);
  for (auto& p : named_parameters()) {
    const std::string& name = p.key();
    if (p.value().dim() < 2 || name.find("norm") != std::string::npos) continue;  // gains stay 1
    const bool residual = name.find(".out.weight") != std::string::npos ||
                          name.find(".down.weight") != std::string::npos;
    torch::nn::init::normal_(p.value(), 0.0, residual ? residual_std : config_.init_std);
  }
}

at::Tensor TransformerImpl::forward(const at::Tensor& tokens, int64_t position_offset) {
  const int64_t T = tokens.size(1);
  RopeTables rope = RopeTables::Make(position_offset, T, config_.head_dim(), config_.rope_base,
                                     tokens.device());  // (T, D/2) each
  MixerContext ctx{&rope};
  at::Tensor x = wte_(tokens);                    // (B, T, C)
  for (Block& block : blocks_) x = block(x, ctx);  // (B, T, C)
  x = norm_f_(x);                                 // (B, T, C)
  at::Tensor logits = lm_head_ ? lm_head_(x) : at::linear(x, wte_->weight);  // (B, T, V)
  return logits.to(at::kFloat);                                             // (B, T, V)
}

ParamCounts TransformerImpl::CountParams() const {
  ParamCounts c;
  for (const auto& p : named_parameters()) {
    const int64_t n = p.value().numel();
    c.total += n;
    if (p.key() == "wte.weight" || p.key() == "lm_head.weight") c.embedding += n;
  }
  c.non_embedding = c.total - c.embedding;
  return c;
}

}  // namespace onset::model
