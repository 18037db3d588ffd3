// Gated DeltaNet, the 'D' mixer's kernel (Yang, Kautz, Hatamizadeh 2024, "Gated Delta Networks:
// Improving Mamba2 with Delta Rule", arXiv 2412.06464).
//
// Dimension letters used in this file and in gated_delta_net.cc:
//   B batch, H heads, T positions, K key dim, V value dim, C chunk length,
//   N number of chunks (T padded up to N * C).
//
// Recurrence, row-vector convention (q_t, k_t are (1, K) rows, v_t a (1, V) row, S_t is (K, V),
// the transpose of the paper's (V, K) state):
//   S_t = a_t (I - beta_t k_t^T k_t) S_{t-1} + beta_t k_t^T v_t,   o_t = q_t S_t,
// i.e. the delta rule on the decayed state: S_t = a_t S_{t-1} + k_t^T u_t with the written
// value u_t = beta_t (v_t - a_t k_t S_{t-1}). a_t = exp(g_t), g_t <= 0; beta_t in (0, 1).
// The caller supplies g and beta; the mixer (linear_mixers.h) L2-normalises q and k.
//
// Chunkwise-parallel form (the paper's WY representation, solved per chunk as a unit lower
// triangular system, the "UT transform"): with b_i the cumulative log-decay from the chunk start
// to position i (inclusive) and S_0 the state entering the chunk,
//   (I + A) U = diag(beta) V - diag(beta exp(b)) K S_0,  A_ij = beta_i exp(b_i - b_j) k_i . k_j
// for j < i (0 elsewhere), so U = W_v - W_k S_0 with [W_v | W_k] = (I + A)^-1 [beta V | beta
// exp(b) K] computed for all chunks at once. Then, chunk by chunk,
//   o_i = exp(b_i) q_i S_0 + sum_{j <= i} exp(b_i - b_j) (q_i . k_j) u_j,
//   S_end = exp(b_last) S_0 + sum_j exp(b_last - b_j) k_j^T u_j.
// Only this last pass loops, over the N chunks (not over tokens); all exponents are <= 0.
#pragma once

#include <cstdint>

#include <ATen/ATen.h>

namespace onset::model {

// Chunkwise-parallel form. q, k: (B, H, T, K), v: (B, H, T, V), g, beta: (B, H, T)
// -> (B, H, T, V). chunk >= 1; T need not be a multiple of it. Runs in q's dtype.
// When `final_state` is not null it receives S_T: (B, H, K, V), the state a decoder carries on.
at::Tensor GatedDeltaNetChunked(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                const at::Tensor& g, const at::Tensor& beta, int64_t chunk,
                                at::Tensor* final_state = nullptr);

// One recurrent step. q, k: (B, H, K), v: (B, H, V), g, beta: (B, H); state: (B, H, K, V),
// replaced by S_t. Returns o_t: (B, H, V). For decoding with a carried state.
at::Tensor GatedDeltaNetStep(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                             const at::Tensor& g, const at::Tensor& beta, at::Tensor* state);

// Plain reference: the recurrence token by token from S_0 = 0. Same shapes as the chunked form.
at::Tensor GatedDeltaNetRecurrent(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                  const at::Tensor& g, const at::Tensor& beta);

}  // namespace onset::model
