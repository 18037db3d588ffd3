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

#include "model/config/cell_config.h"
#include "model/nn/rope.h"
#include "model/nn/short_conv.h"

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
  // model.logn_scaling: the query factor per position, (T) float, max(1, log(p + 1) /
  // log(seq_len)), applied by the layers that ModelConfig::LayerUsesLogn names; undefined
  // when off.
  at::Tensor logn_scale;
};

// One layer's decoding state (model/evaluation/decoding.h drives it). Which fields a layer uses
// depends on its mixer; the others stay undefined.
struct LayerCache {
  // F and S layers: keys (after QK-norm and RoPE) and values of the cached positions, the
  // positions first_position .. first_position + T_kept - 1. F layers keep every position, S
  // layers at most the last `window`.
  at::Tensor k, v;  // (B, G, T_kept, D) each
  int64_t first_position = 0;
  // F and S layers, when record_attention is set: the attention probabilities of the last
  // step's query over the cached positions (after appending that step's key).
  bool record_attention = false;
  at::Tensor probs;  // (B, H, T_kept) float32
  // L and D layers: the recurrent state S_t.
  at::Tensor state;  // (B, H, K, V) float32
  // Layers with the short convolution (model.short_conv): its last K - 1 inputs.
  at::Tensor conv_state;  // (B, K - 1, C') with C' the channels it convolves
};

// Which of a mixer's entry points a pass through the model takes.
enum class MixerPass {
  kForward,  // Mixer::Forward: training and scoring
  kPrefill,  // Mixer::Prefill: a prompt, filling a fresh cache
  kStep,     // Mixer::Step: one new position, reading and extending the cache
};

// A causal sequence mixer: (B, T, C) -> (B, T, C). Attention here; the recurrent L and D
// mixers in linear_mixers.h.
class Mixer : public torch::nn::Module {
 public:
  // Forward, Prefill or Step as `pass` says; `cache` is unused by kForward (may be null).
  at::Tensor Apply(const at::Tensor& x, const MixerContext& ctx, MixerPass pass, LayerCache* cache);
  virtual at::Tensor Forward(const at::Tensor& x, const MixerContext& ctx) = 0;
  // Forward over a prompt that also fills a fresh `cache` for Step. Same result as Forward.
  virtual at::Tensor Prefill(const at::Tensor& x, const MixerContext& ctx, LayerCache* cache) = 0;
  // One new position per row: x (B, 1, C) -> (B, 1, C), ctx.rope for that one position;
  // reads and extends `cache`. Equal (up to rounding) to the last row of Forward over the
  // whole sequence.
  virtual at::Tensor Step(const at::Tensor& x, const MixerContext& ctx, LayerCache* cache) = 0;

  // Head-masking ablation: mask (H) float, 0 zeroes a head's output before the output
  // projection (an attention head's weighted values; a recurrent head's normalised read-out of
  // its state), 1 keeps it. An undefined tensor (the default) masks nothing.
  void SetHeadMask(const at::Tensor& mask);
  virtual int64_t heads() const = 0;

 protected:
  // y with the masked heads zeroed; `head_dim` is the dimension of y that indexes heads.
  at::Tensor MaskHeads(const at::Tensor& y, int64_t head_dim) const;

 private:
  at::Tensor head_mask_;  // (H), undefined = no mask
};

// Multi-head causal attention, full (window 0) or sliding-window, optional RoPE and QK-norm,
// grouped-query (config.kv_heads = G < H: query head h reads key/value head h / (H / G)).
// With the short convolution (model.short_conv naming F or S; short_conv.h) the q, k, v
// projections are convolved before QK-norm and RoPE.
class AttentionMixer : public Mixer {
 public:
  // `use_logn`: scale queries by MixerContext::logn_scale (NoPE layers only). `short_conv`:
  // taps of the short convolution on q, k, v; 0 = none.
  AttentionMixer(const ModelConfig& config, int64_t window, bool use_rope, bool use_logn = false,
                 int64_t short_conv = 0);
  at::Tensor Forward(const at::Tensor& x, const MixerContext& ctx) override;
  at::Tensor Prefill(const at::Tensor& x, const MixerContext& ctx, LayerCache* cache) override;
  // The step attends its one query over the cache with explicit probabilities (one row: cheap),
  // which it records for the retrieval-head probe.
  at::Tensor Step(const at::Tensor& x, const MixerContext& ctx, LayerCache* cache) override;

  int64_t heads() const override { return heads_; }
  int64_t window() const { return window_; }
  bool use_rope() const { return use_rope_; }

 private:
  struct Qkv {
    at::Tensor q;     // (B, H, T, D)
    at::Tensor k, v;  // (B, G, T, D)
  };
  // `pass` and `cache` drive the short convolution's state (Prefill fills, Step advances it).
  Qkv Project(const at::Tensor& x, const MixerContext& ctx, MixerPass pass, LayerCache* cache);
  // Forward and Prefill: causal attention over all of x (B, T, C) -> (B, T, C); with a cache,
  // also keeps the keys and values that Step will read.
  at::Tensor Attend(const at::Tensor& x, const MixerContext& ctx, LayerCache* cache);
  at::Tensor Output(at::Tensor y);  // (B, H, T, D) -> (B, T, C): head mask, output projection

  int64_t heads_, kv_heads_, head_dim_, window_;
  bool use_rope_, use_logn_;
  torch::nn::Linear qkv_{nullptr}, out_{nullptr};
  ShortConv conv_{nullptr};    // null without the short convolution
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
  // (B, T, C) -> (B, T, C), the mixer taking `pass` (Mixer::Apply; decoding passes read and
  // fill `cache`).
  at::Tensor forward(const at::Tensor& x, const MixerContext& ctx,
                     MixerPass pass = MixerPass::kForward, LayerCache* cache = nullptr);

  Mixer& mixer() { return *mixer_; }

 private:
  RMSNorm norm1_{nullptr}, norm2_{nullptr};
  std::shared_ptr<Mixer> mixer_;
  SwiGlu mlp_{nullptr};
  // The profiler scope of the mixer's forward, "forward/mixer F" for an F layer (step_phases.h).
  std::string mixer_scope_;
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

  // Cached decoding (model/evaluation/decoding.h). Prefill: tokens (B, T) at positions 0 .. T-1 ->
  // logits (B, T, V), with `caches` resized to one fresh LayerCache per layer (fields set
  // before the call, such as record_attention, are kept). Step: tokens (B, 1) at absolute
  // position `position` (the number of positions already cached) -> logits (B, 1, V).
  at::Tensor Prefill(const at::Tensor& tokens, std::vector<LayerCache>* caches);
  at::Tensor Step(const at::Tensor& tokens, int64_t position, std::vector<LayerCache>* caches);

  ParamCounts CountParams() const;
  const ModelConfig& config() const { return config_; }
  Block& block(int i) { return blocks_[i]; }

 private:
  void InitWeights();
  // The one walk through the model, which forward, Prefill and Step take: embedding -> blocks
  // (mixers taking `pass`, block i with (*caches)[i] when decoding) -> Logits. tokens (B, T) at
  // absolute positions offset .. offset + T - 1 -> logits (B, T, V).
  at::Tensor Walk(const at::Tensor& tokens, int64_t offset, MixerPass pass,
                  std::vector<LayerCache>* caches);
  at::Tensor Logits(at::Tensor x);  // final norm and output projection: (B, T, C) -> (B, T, V)
  // MixerContext::logn_scale for positions offset .. offset + T - 1; undefined when off.
  at::Tensor LognScale(int64_t offset, int64_t T, const at::Device& device) const;

  ModelConfig config_;
  torch::nn::Embedding wte_{nullptr};
  std::vector<Block> blocks_;  // registered as h0, h1, ...
  RMSNorm norm_f_{nullptr};
  torch::nn::Linear lm_head_{nullptr};  // null when tied to wte_
};
TORCH_MODULE(Transformer);

}  // namespace onset::model
