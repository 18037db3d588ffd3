// Causal attention kernels for the 'F' (full) and 'S' (sliding-window) mixers.
//
// Dimension letters used in this file and in attention.cc:
//   B batch, H heads, T query positions (= key positions), D head dim,
//   W window, N number of query chunks (T padded up to N * W).
//
// Masking rule: query i attends key j iff j <= i (full), and additionally i - j < window
// (sliding window). window <= 0 means full causal attention; window >= T is full causal too.
//
// ReferenceAttention is the plain definition (explicit scores, mask, softmax); the other
// functions are the fast paths the model uses and are tested against it.
#pragma once

#include <cstdint>

#include <ATen/ATen.h>

namespace onset::model {

// Plain reference: softmax(q k^T / sqrt(D) masked) v. q, k, v: (B, H, T, D) -> (B, H, T, D).
// O(T^2) memory; for tests, probes and debugging.
at::Tensor ReferenceAttention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                              int64_t window);

// The boolean band mask (T, T), true = attend.
at::Tensor CausalBandMask(int64_t T, int64_t window, const at::Device& device);

// Full causal attention through scaled_dot_product_attention(is_causal=true).
at::Tensor FullCausalAttention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v);

// Sliding-window attention as scaled_dot_product_attention with a (T, T) band mask: O(T^2).
at::Tensor BandMaskAttention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                             int64_t window);

// Sliding-window attention in O(T * W): queries in chunks of W attend to the keys of their own
// chunk and the previous one, under a fixed (W, 2W) mask. Requires 1 <= window.
at::Tensor BlockedSlidingWindowAttention(const at::Tensor& q, const at::Tensor& k,
                                         const at::Tensor& v, int64_t window);

// Grouped-query attention's key/value sharing: (B, G, T, D) -> (B, G * groups, T, D), each
// head repeated `groups` times in place (head h of the result is head h / groups of x).
at::Tensor RepeatKv(const at::Tensor& x, int64_t groups);

// What the model calls: full causal when window <= 0 or window >= T, the blocked kernel when
// it saves work (2 * W < T), the band mask otherwise.
at::Tensor CausalAttention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                           int64_t window);

}  // namespace onset::model
