// Greedy decoding for the NIAH probes: the plain reference that re-runs the full forward on the
// growing sequence, and the cached decoder that the evaluator uses.
//
// Dimension letters: B batch, L prompt length, S decoded steps, V vocab, A attention (F and S)
// layers, H heads.
//
// The cached decoder prefills prompt[:, :L-1] with the normal forward (each layer keeps its
// LayerCache: all keys/values for F layers, the last `window` for S layers, the recurrent state
// for L and D layers), then steps one position at a time from prompt[:, L-1]: every generated
// token costs one position instead of a forward over the whole sequence. The step that
// produces generated token s is the query at position L - 1 + s, so its attention is the one the
// retrieval-head probe reads.
#pragma once

#include <vector>

#include <ATen/ATen.h>

#include "model/nn/transformer.h"

namespace onset::model {

// Reference: prompts (B, L) int64 -> (B, S) int64, each step a full forward. When `logits` is
// not null it receives the logits that chose each token: (B, S, V) float.
at::Tensor GreedyDecode(Transformer& model, const at::Tensor& prompts, int steps,
                        at::Tensor* logits = nullptr);

// Where each F/S head looked while decoding: its most-attended (top-1) absolute position.
struct AttentionTrace {
  std::vector<int> layers;  // the F and S layer indices, in order (A entries)
  at::Tensor top1;          // (B, S, A, H) int64 on the CPU
};

// Cached decoding, same contract as GreedyDecode (requires L >= 2). When `trace` is not null
// it is filled with the top-1 positions of every F/S head at every step.
at::Tensor CachedGreedyDecode(Transformer& model, const at::Tensor& prompts, int steps,
                              at::Tensor* logits = nullptr, AttentionTrace* trace = nullptr);

}  // namespace onset::model
