// Decayed linear attention, the 'L' mixer's kernel: scalar-gated linear attention with one
// data-dependent decay per head and position (Lightning Attention-2, Qin et al. 2024, with the
// scalar gate of GLA / Mamba-2 in place of its fixed per-head decay).
//
// Dimension letters used in this file and in linear_attention.cc:
//   B batch, H heads, T positions, K key dim, V value dim, C chunk length,
//   N number of chunks (T padded up to N * C).
//
// Recurrence (row-vector convention: q_t, k_t are (1, K) rows, v_t a (1, V) row, S_t is (K, V)):
//   S_t = a_t S_{t-1} + k_t^T v_t,   o_t = q_t S_t,   a_t = exp(g_t), g_t <= 0,   S_0 = 0.
// The caller supplies the log-decays g; feature maps, normalisation and gates live in the mixer
// (linear_mixers.h).
//
// Chunkwise-parallel form: with b_i the cumulative log-decay from the chunk start to position i
// (inclusive) and S_0 the state entering the chunk,
//   o_i = exp(b_i) q_i S_0 + sum_{j <= i in chunk} exp(b_i - b_j) (q_i . k_j) v_j,
//   S_end = exp(b_last) S_0 + sum_j exp(b_last - b_j) k_j^T v_j.
// The states entering the chunks are themselves a decayed prefix sum over chunks, computed with
// the same masked-exponent matrix at chunk level, so the whole form has no sequential loop.
// Every exponent is a difference b_i - b_j with j <= i, hence <= 0: nothing overflows.
#pragma once

#include <cstdint>

#include <ATen/ATen.h>

namespace onset::model {

// exp(row_i - col_j) where j <= i (j < i when `strict`), 0 elsewhere. row, col: (..., M) ->
// (..., M, M). The exponent is masked to -inf before exp, so masked entries never overflow and
// carry zero gradient.
at::Tensor SegmentDecay(const at::Tensor& row, const at::Tensor& col, bool strict);

// The chunk layout of a chunkwise kernel over T positions: N chunks of C, the last one padded
// with zeros. Padded positions come after every real one (zero keys, values, gates and betas
// write nothing), so they change no real output.
struct ChunkLayout {
  ChunkLayout(const at::Tensor& q, int64_t chunk);     // q: (B, H, T, K)
  at::Tensor Split(const at::Tensor& x) const;         // (B, H, T, X) -> (B, H, N, C, X)
  at::Tensor SplitScalars(const at::Tensor& x) const;  // (B, H, T) -> (B, H, N, C)

  int64_t B, H, T, C, N, pad;
};

// Chunkwise-parallel form. q, k: (B, H, T, K), v: (B, H, T, V), g: (B, H, T) -> (B, H, T, V).
// chunk >= 1; T need not be a multiple of it (the tail is zero-padded). Runs in q's dtype.
// When `final_state` is not null it receives S_T: (B, H, K, V), the state a decoder carries on.
at::Tensor DecayedLinearAttentionChunked(const at::Tensor& q, const at::Tensor& k,
                                         const at::Tensor& v, const at::Tensor& g, int64_t chunk,
                                         at::Tensor* final_state = nullptr);

// One recurrent step. q, k: (B, H, K), v: (B, H, V), g: (B, H); state: (B, H, K, V), replaced
// by S_t. Returns o_t: (B, H, V). For decoding with a carried state.
at::Tensor DecayedLinearAttentionStep(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                      const at::Tensor& g, at::Tensor* state);

// Plain reference: the recurrence token by token from S_0 = 0. Same shapes as the chunked form.
at::Tensor DecayedLinearAttentionRecurrent(const at::Tensor& q, const at::Tensor& k,
                                           const at::Tensor& v, const at::Tensor& g);

}  // namespace onset::model
