// The recurrent mixers: 'L' (decayed linear attention) and 'D' (Gated DeltaNet) layers.
//
// Dimension letters used in this file and linear_mixers.cc:
//   B batch, T positions, C d_model, H heads, D head dim (C = H * D; keys and values both D).
//
// Both share one block layout (GLA / Gated DeltaNet style; docs/science.md, "The mixers and
// their references", says where it follows fla's layers and where it differs):
//   one input projection C -> q, k, v (H x D each), an output gate (C) and per-head scalars;
//   with model.short_conv (on by default for L and D), the short causal depthwise convolution
//   on q, k and v followed by SiLU (short_conv.h), as fla's Gated DeltaNet; without it q, k, v
//   are the projections as they are;
//   q and k L2-normalised per head, q scaled by D^-1/2 (Gated DeltaNet's choice, used for L
//   too: it bounds |q . k| <= D^-1/2 and keeps the state bounded, where Lightning uses a SiLU
//   feature map);
//   the kernel (linear_attention.h, gated_delta_net.h), computed in float32;
//   per-head RMSNorm of the output with a learned gain (TransNormer's SRMSNorm / GLA's
//   GroupNorm), the head mask of the ablation (Mixer::SetHeadMask), times the gate
//   silu(W_gate x), then the output projection C -> C.
// Neither uses positional encoding: the decays order the past.
//
// Gates:
//   L: g_t = logsigmoid(w_g . x_t) / 16 per head (GLA's gate with its temperature 16: decays
//      start near exp(-0.69 / 16) = 0.96, i.e. a horizon of tens of tokens).
//   D: g_t = -exp(A_log) softplus(w_a . x_t + dt_bias) per head (Mamba-2's gate, as in Gated
//      DeltaNet), A = exp(A_log) initialised in [1, 16], softplus(dt_bias) in [1e-3, 1e-1];
//      beta_t = sigmoid(w_b . x_t).
// Training uses the chunkwise form with config.chunk_size; `use_recurrent` switches a mixer's
// Forward to the token-by-token reference (tests, debugging). Prefill always runs chunkwise.
#pragma once

#include <cstdint>

#include "model/nn/transformer.h"

namespace onset::model {

// What L and D layers share: the three entry points map onto one Run(mode), the recurrent state
// is the decode cache, and the projections are laid out alike. Subclasses register the
// parameters (names are part of the checkpoint and export formats).
class RecurrentMixer : public Mixer {
 public:
  at::Tensor Forward(const at::Tensor& x, const MixerContext& ctx) override;  // (B, T, C)
  // Prefill keeps the chunked form's final state; Step runs the kernel's one-token step.
  at::Tensor Prefill(const at::Tensor& x, const MixerContext& ctx, LayerCache* cache) override;
  at::Tensor Step(const at::Tensor& x, const MixerContext& ctx, LayerCache* cache) override;

  int64_t heads() const override { return heads_; }

  bool use_recurrent = false;

 protected:
  using Mode = MixerPass;  // kPrefill fills cache->state, kStep updates it
  // The heads and chunk size of `config`. Each mixer registers its own short convolution (conv_,
  // after its input projection, so that parameters keep their order).
  explicit RecurrentMixer(const ModelConfig& config);
  virtual at::Tensor Run(const at::Tensor& x, Mode mode, LayerCache* cache) = 0;

  // The first 3C features of the input projection, q, k and v, through the short convolution
  // when the layer has one (its state in `cache` as `mode` says). (B, T, 3C) -> (B, T, 3C).
  at::Tensor Convolve(const at::Tensor& qkv, Mode mode, LayerCache* cache);
  // The kernel's output y (B, H, T, D) float32 -> the mixer's output (B, T, C) in x's dtype:
  // per-head RMSNorm, head mask, gate, output projection.
  at::Tensor Output(const at::Tensor& y, const at::Tensor& gate, const at::Tensor& x);

  int64_t heads_, head_dim_, chunk_;
  torch::nn::Linear in_{nullptr}, out_{nullptr};
  ShortConv conv_{nullptr};      // null without the short convolution
  at::Tensor head_norm_weight_;  // (D)
};

class LinearAttentionMixer : public RecurrentMixer {
 public:
  // `short_conv`: taps of the short convolution on q, k, v; 0 = none.
  LinearAttentionMixer(const ModelConfig& config, int64_t short_conv);

 private:
  at::Tensor Run(const at::Tensor& x, Mode mode, LayerCache* cache) override;
};

class GatedDeltaNetMixer : public RecurrentMixer {
 public:
  // `short_conv`: as for LinearAttentionMixer.
  GatedDeltaNetMixer(const ModelConfig& config, int64_t short_conv);

 private:
  at::Tensor Run(const at::Tensor& x, Mode mode, LayerCache* cache) override;

  at::Tensor a_log_;    // (H)
  at::Tensor dt_bias_;  // (H)
};

}  // namespace onset::model
