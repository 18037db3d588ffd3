#include "model/nn/transformer.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <ATen/record_function.h>
#include <torch/nn/init.h>

#include "model/config/vocab.h"
#include "model/nn/attention.h"
#include "model/nn/attention_backend.h"
#include "model/nn/fused_cpu_ops.h"
#include "model/nn/linear_mixers.h"

namespace onset::model {

RMSNormImpl::RMSNormImpl(int64_t dim, double eps) : eps_(eps) {
  weight = register_parameter("weight", torch::ones({dim}));
}

at::Tensor RMSNormImpl::forward(const at::Tensor& x) {
  // x * rsqrt(mean(x^2) + eps) * weight: one pass on the CPU (fused_cpu_ops.h), at::rms_norm's
  // fused kernel on CUDA.
  return RmsNorm(x, weight, eps_);  // (..., dim)
}

at::Tensor Mixer::Apply(const at::Tensor& x, const MixerContext& ctx, MixerPass pass,
                        LayerCache* cache) {
  switch (pass) {
    case MixerPass::kPrefill:
      return Prefill(x, ctx, cache);  // (B, T, C)
    case MixerPass::kStep:
      return Step(x, ctx, cache);  // (B, 1, C)
    case MixerPass::kForward:
      break;
  }
  return Forward(x, ctx);  // (B, T, C)
}

void Mixer::SetHeadMask(const at::Tensor& mask) {
  TORCH_CHECK(!mask.defined() || (mask.dim() == 1 && mask.size(0) == heads()),
              "head mask must be (", heads(), ")");
  if (!mask.defined()) {
    head_mask_ = mask;
    return;
  }
  const auto params = parameters();
  head_mask_ = mask.to(params.empty() ? at::Device(at::kCPU) : params[0].device(), at::kFloat);
}

at::Tensor Mixer::MaskHeads(const at::Tensor& y, int64_t head_dim) const {
  if (!head_mask_.defined()) return y;
  std::vector<int64_t> shape(y.dim(), 1);
  shape[head_dim] = head_mask_.size(0);
  return y * head_mask_.to(y.scalar_type()).view(shape);  // y's shape
}

AttentionMixer::AttentionMixer(const ModelConfig& config, int64_t window, bool use_rope,
                               bool use_logn, int64_t short_conv)
    : heads_(config.heads),
      kv_heads_(config.resolved_kv_heads()),
      head_dim_(config.head_dim()),
      window_(window),
      use_rope_(use_rope),
      use_logn_(use_logn && !use_rope) {
  const int64_t C = config.d_model, QKV = (heads_ + 2 * kv_heads_) * head_dim_;
  qkv_ = register_module("qkv", torch::nn::Linear(torch::nn::LinearOptions(C, QKV).bias(false)));
  out_ = register_module("out", torch::nn::Linear(torch::nn::LinearOptions(C, C).bias(false)));
  if (short_conv > 0) conv_ = register_module("conv", ShortConv(QKV, short_conv));
  if (config.qk_norm) {
    qk_norm_weight_ = register_parameter("qk_norm_weight", torch::ones({2, 1, head_dim_}));
  }
}

AttentionMixer::Qkv AttentionMixer::Project(const at::Tensor& x, const MixerContext& ctx,
                                            MixerPass pass, LayerCache* cache) {
  const int64_t B = x.size(0), T = x.size(1), H = heads_, G = kv_heads_, D = head_dim_;
  at::Tensor qkv = qkv_(x);  // (B, T, (H+2G) D)
  if (conv_) {
    if (pass == MixerPass::kStep) {
      qkv = conv_->Step(qkv, &cache->conv_state);  // (B, 1, (H+2G) D)
    } else if (pass == MixerPass::kPrefill) {
      qkv = conv_->Prefill(qkv, &cache->conv_state);  // (B, T, (H+2G) D)
    } else {
      qkv = conv_(qkv);  // (B, T, (H+2G) D)
    }
  }
  // Queries and keys travel together through QK-norm and RoPE: half the elementwise ops.
  auto parts = qkv.view({B, T, H + 2 * G, D}).split_with_sizes({H + G, G}, 2);
  at::Tensor qk = parts[0];                 // (B, T, H+G, D)
  at::Tensor v = parts[1].transpose(1, 2);  // (B, G, T, D)
  if (qk_norm_weight_.defined()) {
    at::Tensor w = qk_norm_weight_.to(qk.scalar_type());                     // (2, 1, D)
    at::Tensor gains = at::cat({w[0].expand({H, D}), w[1].expand({G, D})});  // (H+G, D)
    qk = RmsNorm(qk, gains, kNormEps);                                       // (B, T, H+G, D)
  }
  if (use_rope_) qk = ApplyRope(qk, *ctx.rope, /*time_dim=*/1);  // (B, T, H+G, D)
  at::Tensor q = qk.narrow(2, 0, H).transpose(1, 2);             // (B, H, T, D)
  if (use_logn_ && ctx.logn_scale.defined()) {
    q = q * ctx.logn_scale.to(q.scalar_type()).view({1, 1, T, 1});  // (B, H, T, D)
  }
  at::Tensor k = qk.narrow(2, H, G).transpose(1, 2);  // (B, G, T, D)
  return {q, k, v};
}

at::Tensor AttentionMixer::Output(at::Tensor y) {
  const int64_t B = y.size(0), H = y.size(1), T = y.size(2), D = y.size(3);
  y = MaskHeads(y, /*head_dim=*/1);              // (B, H, T, D)
  y = y.transpose(1, 2).reshape({B, T, H * D});  // (B, T, C)
  return out_(y);                                // (B, T, C)
}

at::Tensor AttentionMixer::Attend(const at::Tensor& x, const MixerContext& ctx, LayerCache* cache) {
  Qkv p = Project(x, ctx, cache ? MixerPass::kPrefill : MixerPass::kForward,
                  cache);  // q (B, H, T, D), k, v (B, G, T, D)
  if (cache != nullptr) {
    const int64_t T = x.size(1);
    // An S layer's next query sees only the last window - 1 of these keys; keeping `window`
    // is simpler and Step trims anyway.
    const int64_t kept = window_ > 0 ? std::min(window_, T) : T;
    cache->k = p.k.narrow(2, T - kept, kept);  // (B, G, kept, D)
    cache->v = p.v.narrow(2, T - kept, kept);  // (B, G, kept, D)
    cache->first_position = T - kept;
  }
  // k, v stay (B, G, T, D): each backend shares them across query heads its own way.
  return Output(Attention(p.q, p.k, p.v, window_));  // (B, T, C)
}

at::Tensor AttentionMixer::Forward(const at::Tensor& x, const MixerContext& ctx) {
  return Attend(x, ctx, /*cache=*/nullptr);  // (B, T, C)
}

at::Tensor AttentionMixer::Prefill(const at::Tensor& x, const MixerContext& ctx,
                                   LayerCache* cache) {
  return Attend(x, ctx, cache);  // (B, T, C)
}

at::Tensor AttentionMixer::Step(const at::Tensor& x, const MixerContext& ctx, LayerCache* cache) {
  TORCH_CHECK(x.size(1) == 1, "AttentionMixer::Step takes one position, got ", x.size(1));
  const int64_t D = head_dim_;
  Qkv p = Project(x, ctx, MixerPass::kStep, cache);  // q (B, H, 1, D), k, v (B, G, 1, D)
  at::Tensor k = at::cat({cache->k, p.k}, 2);        // (B, G, T_kept + 1, D)
  at::Tensor v = at::cat({cache->v, p.v}, 2);        // (B, G, T_kept + 1, D)
  const int64_t n = k.size(2);
  // The query at position t attends keys t - window + 1 .. t: at most `window` of them.
  const int64_t drop = window_ > 0 && n > window_ ? n - window_ : 0;
  cache->k = k.narrow(2, drop, n - drop);  // (B, G, T_kept', D)
  cache->v = v.narrow(2, drop, n - drop);  // (B, G, T_kept', D)
  cache->first_position += drop;
  k = RepeatKv(cache->k, heads_ / kv_heads_);  // (B, H, T_kept', D)
  v = RepeatKv(cache->v, heads_ / kv_heads_);  // (B, H, T_kept', D)
  // Every cached key is visible to the newest query: no mask.
  at::Tensor scores = at::matmul(p.q, k.transpose(-2, -1)).to(at::kFloat) /
                      std::sqrt(static_cast<double>(D));         // (B, H, 1, T_kept')
  at::Tensor probs = at::softmax(scores, -1);                    // (B, H, 1, T_kept')
  if (cache->record_attention) cache->probs = probs.squeeze(2);  // (B, H, T_kept')
  at::Tensor y = at::matmul(probs.to(v.scalar_type()), v);       // (B, H, 1, D)
  return Output(y);                                              // (B, 1, C)
}

std::shared_ptr<Mixer> MakeMixer(const ModelConfig& config, int layer) {
  const char kind = config.pattern.at(layer);
  const bool rope = config.LayerUsesRope(layer), logn = config.LayerUsesLogn(layer);
  const int64_t conv = config.LayerUsesShortConv(layer) ? config.short_conv_kernel : 0;
  if (kind == kFullAttention) return std::make_shared<AttentionMixer>(config, 0, rope, logn, conv);
  if (kind == kSlidingWindow) {
    return std::make_shared<AttentionMixer>(config, config.window, rope, logn, conv);
  }
  if (kind == kLinearAttention) return std::make_shared<LinearAttentionMixer>(config, conv);
  if (kind == kGatedDeltaNet) return std::make_shared<GatedDeltaNetMixer>(config, conv);
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
  at::Tensor h = SwiGluActivation(gate_up_(x));  // (B, T, 2F) -> (B, T, F)
  return down_(h);                               // (B, T, C)
}

BlockImpl::BlockImpl(const ModelConfig& config, int layer) {
  norm1_ = register_module("norm1", RMSNorm(config.d_model));
  mixer_ = register_module("mixer", MakeMixer(config, layer));
  norm2_ = register_module("norm2", RMSNorm(config.d_model));
  mlp_ = register_module("mlp", SwiGlu(config.d_model, config.resolved_mlp_hidden()));
  mixer_scope_ = std::string("forward/mixer ") + config.pattern.at(layer);
}

at::Tensor BlockImpl::forward(const at::Tensor& x, const MixerContext& ctx, MixerPass pass,
                              LayerCache* cache) {
  at::Tensor h;
  {
    RECORD_USER_SCOPE(mixer_scope_);
    h = x + mixer_->Apply(norm1_(x), ctx, pass, cache);  // (B, T, C)
  }
  RECORD_USER_SCOPE("forward/mlp");
  return h + mlp_(norm2_(h));  // (B, T, C)
}

TransformerImpl::TransformerImpl(const ModelConfig& config) : config_(config) {
  wte_ = register_module("wte", torch::nn::Embedding(config.vocab_size, config.d_model));
  for (int i = 0; i < config.layers; ++i) {
    blocks_.push_back(register_module("h" + std::to_string(i), Block(config, i)));
  }
  norm_f_ = register_module("norm_f", RMSNorm(config.d_model));
  if (!config.tie_embeddings) {
    lm_head_ = register_module(
        "lm_head",
        torch::nn::Linear(torch::nn::LinearOptions(config.d_model, config.vocab_size).bias(false)));
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

at::Tensor TransformerImpl::Logits(at::Tensor x) {
  RECORD_USER_SCOPE("forward/logits");
  x = norm_f_(x);                                                            // (B, T, C)
  at::Tensor logits = lm_head_ ? lm_head_(x) : at::linear(x, wte_->weight);  // (B, T, V)
  return logits.to(at::kFloat);                                              // (B, T, V)
}

at::Tensor TransformerImpl::LognScale(int64_t offset, int64_t T, const at::Device& device) const {
  if (config_.logn_scaling == kLognOff) return {};
  at::Tensor p = at::arange(offset + 1, offset + T + 1, at::TensorOptions().dtype(at::kFloat));
  at::Tensor scale = (p.log() / std::log(static_cast<double>(config_.seq_len))).clamp_min(1.0);
  return scale.to(device);  // (T)
}

at::Tensor TransformerImpl::Walk(const at::Tensor& tokens, int64_t offset, MixerPass pass,
                                 std::vector<LayerCache>* caches) {
  const int64_t T = tokens.size(1);
  RopeTables rope = RopeTables::Make(offset, T, config_.head_dim(), config_.rope_base,
                                     tokens.device());  // (T, D/2) each
  MixerContext ctx{&rope, LognScale(offset, T, tokens.device())};
  at::Tensor x = wte_(tokens);  // (B, T, C)
  for (size_t i = 0; i < blocks_.size(); ++i) {
    LayerCache* cache = pass == MixerPass::kForward ? nullptr : &(*caches)[i];
    x = blocks_[i](x, ctx, pass, cache);  // (B, T, C)
  }
  return Logits(x);  // (B, T, V)
}

at::Tensor TransformerImpl::forward(const at::Tensor& tokens, int64_t position_offset) {
  return Walk(tokens, position_offset, MixerPass::kForward, /*caches=*/nullptr);  // (B, T, V)
}

at::Tensor TransformerImpl::Prefill(const at::Tensor& tokens, std::vector<LayerCache>* caches) {
  caches->resize(blocks_.size());
  for (LayerCache& c : *caches) {
    const bool record = c.record_attention;
    c = LayerCache{};
    c.record_attention = record;
  }
  return Walk(tokens, /*offset=*/0, MixerPass::kPrefill, caches);  // (B, T, V)
}

at::Tensor TransformerImpl::Step(const at::Tensor& tokens, int64_t position,
                                 std::vector<LayerCache>* caches) {
  TORCH_CHECK(caches->size() == blocks_.size(), "Step before Prefill");
  return Walk(tokens, position, MixerPass::kStep, caches);  // (B, 1, V)
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
