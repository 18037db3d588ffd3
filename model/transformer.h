// The decoder-only language model: token embedding, pre-norm blocks (RMSNorm -> mixer ->
// residual, RMSNorm -> SwiGLU MLP -> residual), a final RMSNorm and the output projection
// (tied to the embedding or separate). The mixer of layer i comes from model.pattern[i].
//
// Dimension letters used in this file and transformer.cc:
//   B batch, T positions, C d_model, H heads, D head dim (C = H * D), F MLP hidden, V vocab,
//   G key/value heads of grouped-query attention (H a multiple of G).
//
// Single-device code: parallelism, checkpoints and kernels live outside these files.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include <torch/nn/module.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>

#include "model/cell_config.h"
#include "model/rope.h"

namespace onset::model {

inline constexpr double kNormEps = 1e-6;

// RMSNorm over the last dimension with a learned gain.
class RMSNormImpl : public torch::nn::Module {
 public:
  explicit RMSNormImpl(int64_t dim, double eps = kNormEps);
  at::Tensor forward(const at::Tensor& x);  // (..., dim) -> (..., dim)

  at::Tensor weight;  // (dim)

 private:
  double eps_;
};
TORCH_MODULE(RMSNorm);

// What every mixer sees besides its input: the positions of the sequence.
struct MixerContext {
  const RopeTables* rope = nullptr;  // tables for positions offset .. offset + T - 1
};

// A causal sequence mixer: (B, T, C) -> (B, T, C). Attention here; the recurrent L and D
// mixers in linear_mixers.h.
class Mixer : public torch::nn::Module {
 public:
  virtual at::Tensor Forward(const at::Tensor& x, const MixerContext& ctx) = 0;
};

// Multi-head causal attention, full (window 0) or sliding-window, optional RoPE and QK-norm,
// grouped-query (config.kv_heads = G < H: query head h reads key/value head h / (H / G)).
class AttentionMixer : public Mixer {
 public:
  AttentionMixer(const ModelConfig& config, int64_t window, bool use_rope);
  at::Tensor Forward(const at::Tensor& x, const MixerContext& ctx) override;

  int64_t window() const { return window_; }
  bool use_rope() const { return use_rope_; }

 private:
  int64_t heads_, kv_heads_, head_dim_, window_;
  bool use_rope_;
  torch::nn::Linear qkv_{nullptr}, out_{nullptr};
  at::Tensor qk_norm_weight_;  // (2, 1, D) RMSNorm gains of q and k; undefined without QK-norm
};

// The mixer of layer `layer` under `config` (letter config.pattern[layer]).
std::shared_ptr<Mixer> MakeMixer(const ModelConfig& config, int layer);

class SwiGluImpl : public torch::nn::Module {
 public:
  SwiGluImpl(int64_t d_model, int64_t hidden);
  at::Tensor forward(const at::Tensor& x);  // (B, T, C) -> (B, T, C)

 private:
  torch::nn::Linear gate_up_{nullptr}, down_{nullptr};
};
TORCH_MODULE(SwiGlu);

class BlockImpl : public torch::nn::Module {
 public:
  BlockImpl(const ModelConfig& config, int layer);
  at::Tensor forward(const at::Tensor& x, const MixerContext& ctx);  // (B, T, C) -> (B, T, C)

  Mixer& mixer() { return *mixer_; }

 private:
  RMSNorm norm1_{nullptr}, norm2_{nullptr};
  std::shared_ptr<Mixer> mixer_;
  SwiGlu mlp_{nullptr};
};
TORCH_MODULE(Block);

struct ParamCounts {
  int64_t total = 0;
  int64_t embedding = 0;      // token embedding, plus the output matrix when untied
  int64_t non_embedding = 0;  // everything else (the N of scaling laws)
};

class TransformerImpl : public torch::nn::Module {
 public:
  explicit TransformerImpl(const ModelConfig& config);

  // tokens (B, T) int64 -> logits (B, T, V) float. Position p of the input is treated as
  // absolute position position_offset + p (RoPE layers only; NoPE layers ignore it).
  at::Tensor forward(const at::Tensor& tokens, int64_t position_offset = 0);

  ParamCounts CountParams() const;
  const ModelConfig& config() const { return config_; }
  Block& block(int i) { return blocks_[i]; }

 private:
  void InitWeights();

  ModelConfig config_;
  torch::nn::Embedding wte_{nullptr};
  std::vector<Block> blocks_;  // registered as h0, h1, ...
  RMSNorm norm_f_{nullptr};
  torch::nn::Linear lm_head_{nullptr};  // null when tied to wte_
};
TORCH_MODULE(Transformer);

}  // namespace onset::model
