// Held-out losses (docs/metrics.md, "Losses"): eval/heldout_loss, eval/heldout_background_loss
// and eval/short_loss.
//
// Held-out rows are what training sequences are: rows[:, 0] is the BOS token, then seq_len
// tokens of the stream, and position i predicts token i + 1 (target i, i = 0 .. T - 1). A mask
// (N, T) says which targets count: all of them for the held-out loss, the background tokens
// only (record, question and answer tokens left out) for the other two.
//
// The short-context loss predicts every counted target from at most c positions, a sliding
// window that ends at the target's own position: target i (i + 1 positions of context in the
// row) is read off the row's own forward when i + 1 <= c, and otherwise off a window of c
// positions fed as a training sequence starts, BOS and then the c - 1 tokens before it:
// [BOS, row[i - c + 2 .. i]]. So every target sees exactly min(c, i + 1) positions (BOS
// included), never fewer because of where a chunk happened to start, from inputs of the kind
// the model was trained on (a window that starts mid-stream at position 0 without BOS is not).
// With c >= T every target is read off the row's forward: the loss equals the full-context
// loss over the same targets.
//
// Dimension letters: N rows, T = seq_len targets per row, c the context, V vocab, W windows.
#pragma once

#include <cstdint>
#include <vector>

#include <ATen/ATen.h>

#include "model/nn/transformer.h"

namespace onset::model {

// The windows the short-context loss feeds for targets i >= c of rows (N, T + 1) where
// `mask` (N, T) bool is set: inputs (W, c) int64 ([BOS, row[i - c + 2 .. i]]), targets (W)
// int64 (row[i + 1]). context >= 1.
struct LossWindows {
  at::Tensor inputs;
  at::Tensor targets;
};
LossWindows MakeLossWindows(const at::Tensor& rows, const at::Tensor& mask, int64_t context);

// Mean next-token cross-entropy over the targets `mask` (N, T) bool marks (all of them when
// undefined), each seeing at most `context` positions as above; context >= T is the
// full-context loss. NaN when the mask marks none. Runs `model` as it is (mode, grad and
// autocast are the caller's); forwards are sized so that no batch of logits holds more than
// about 2^27 floats.
double WindowedLoss(Transformer& model, const at::Tensor& rows, const at::Tensor& mask,
                    int64_t context);

}  // namespace onset::model
