// Held-out loss with the context capped (docs/metrics.md, "Losses"): eval/heldout_loss and
// eval/short_loss.
//
// Held-out rows are what training sequences are: rows[:, 0] is the BOS token, then seq_len
// tokens of the stream, and position i predicts token i + 1. With a context of c positions, the
// targets rows[:, 1..T] are cut into consecutive chunks of c targets (the last one may be
// shorter), and every chunk is fed as a training sequence starts: BOS at position 0, then the
// c - 1 tokens before its last target, at positions 1 .. c - 1. So every target is predicted
// once, seeing at most c positions (BOS and at most c - 1 tokens), from inputs of the kind the
// model was trained on: the chunk never starts mid-stream at position 0 without BOS.
// With c >= T there is one chunk per row, the row itself: the loss equals eval/heldout_loss.
//
// Dimension letters: N rows, T = seq_len targets per row, c the context, n chunks.
#pragma once

#include <cstdint>
#include <vector>

#include <ATen/ATen.h>

#include "model/nn/transformer.h"

namespace onset::model {

// Chunks of one length: inputs and targets, (n, len) int64 each.
struct LossChunks {
  at::Tensor inputs;
  at::Tensor targets;
};

// rows (N, T + 1) int64, context >= 1: the full-length chunks, then (when c does not divide T)
// the shorter last chunk of every row.
std::vector<LossChunks> MakeLossChunks(const at::Tensor& rows, int64_t context);

// Mean next-token cross-entropy over every target of `rows`, at most `rows_per_forward` rows'
// chunks per forward (bounds eval memory). Runs `model` as it is (mode, grad and autocast are
// the caller's).
double ChunkedLoss(Transformer& model, const at::Tensor& rows, int64_t context,
                   int64_t rows_per_forward = 16);

}  // namespace onset::model
