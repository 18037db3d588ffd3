// Causal and sliding-window attention on the CPU in float32: FlashAttention-2's algorithm over
// tiles of query rows, each tile against all the keys it may see at once, with the products as
// BLAS matrix multiplications and the softmax in one pass per row. The `tiled` attention backend
// and the CPU's default for float32.
//
// Dimension letters: B batch, H query heads, G key/value heads (H a multiple of G), T positions,
// D head dim, R rows of a query tile (kTiledQueryRows, fewer at the end), K keys of a tile.
//
// Work and memory. Query tile [s, e) sees keys [max(0, s - W + 1), e) (all of [0, e) without a
// window), so the products skip what the mask hides above the diagonal and, with a window, left
// of the band: O(T * min(T, W + R)) per head rather than SDPA's dense O(T^2) for a band mask. The
// forward keeps the output and each row's log-sum-exp (B, H, T) for the backward, which
// recomputes the probabilities tile by tile; the scratch is two (R, K) tiles per thread.
//
// Per tile:    S = scale * Q_tile K^T            (R, K), masked
//              P = exp(S - lse), lse per row     (R, K), the rows' softmax
//              O_tile = P V                      (R, D)
// Backward:    dV += P^T dO_tile                 (K, D)
//              dP = dO_tile V^T                  (R, K)
//              dS = P * (dP - rowsum(dO * O))    (R, K)
//              dQ_tile = scale * dS K            (R, D)
//              dK += scale * dS^T Q_tile         (K, D)
//
// Grouped-query attention needs no copies: query head h reads key/value head h / (H / G); the
// backward runs a key/value head's query heads in one task so that their dK and dV sums are one
// thread's. q, k and v may be any strided views whose last dimension is contiguous (the
// model's (B, T, N, D) projections transposed), so nothing is copied on the way in; the
// output is (B, T, H, D) memory seen as (B, H, T, D), which the model's output projection reads
// without a copy.
//
// Numerics: the products sum in BLAS's order and exp is a polynomial (relative error below
// 2e-7), so results match SDPA and the fp64 reference to rounding (tests hold them to 2e-5),
// not bitwise.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>

namespace onset::model {

// Query rows per tile: large enough that the products run near the BLAS's peak, small enough
// that a (R, K) tile of a few thousand keys stays in a core's cache.
inline constexpr int64_t kTiledQueryRows = 64;

// Whether the products go through the BLAS's sgemm (when LibTorch exports one, as its x86 wheels
// do) or through at::mm (a LibTorch without it). Tests set false to check the second path.
void SetTiledAttentionUsesSgemm(bool on);
bool TiledAttentionUsesSgemm();

// Whether TiledCausalAttention takes these inputs: float32 CPU tensors with D > 0.
bool TiledAttentionTakes(const at::Tensor& q);

// The most keys one tile sees: T without a window, else min(T, R + W - 1).
int64_t TiledKeysPerTile(int64_t T, int64_t window);

// Where the auto backend stops taking the tiled kernel: a (64, K) tile of scores past 1024 keys
// leaves a core's L2, and at T = 2048 and 4096 without a window the forward ran 10-16% slower
// than SDPA's on one core (forward and backward together 3-7% faster; docs/cpu-benchmark.md).
// Windows keep K at R + W - 1, so sliding-window layers take it at any T.
inline constexpr int64_t kTiledAutoMaxKeys = 1024;

// Causal attention with `window` (<= 0 or >= T: full). q (B, H, T, D); k, v (B, G, T, D), float32
// on the CPU. Returns (B, H, T, D), differentiable in q, k and v.
at::Tensor TiledCausalAttention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                int64_t window);

}  // namespace onset::model
