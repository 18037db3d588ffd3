// The tile plan of the sliding-window flash attention kernels (swa_attention.cu), shared with
// the host so that it is tested on any machine (tests/kernels/swa_tiles_test.cc).
//
// Query i attends key j iff j <= i and, with a window W >= 1, i - j < W (W <= 0: no window).
// A query tile [q0, q0 + Bq) therefore needs the key tiles that meet [q0 - W + 1, q0 + Bq - 1]
// and a key tile [k0, k0 + Bk) is needed by the query tiles that meet [k0, k0 + Bk - 1 + W - 1]:
// O(T * W) tile pairs instead of O(T^2). Tiles wholly outside the window are never visited.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define ONSET_HOST_DEVICE __host__ __device__
#else
#define ONSET_HOST_DEVICE
#endif

namespace onset::kernels {

// Half-open range of tile indices [first, last).
struct TileRange {
  int64_t first = 0;
  int64_t last = 0;
};

ONSET_HOST_DEVICE inline bool Attends(int64_t i, int64_t j, int64_t window) {
  return j <= i && (window <= 0 || i - j < window);
}

// Key tiles (of `key_tile` keys) that query tile `q_tile` (of `query_tile` queries) needs.
ONSET_HOST_DEVICE inline TileRange KeyTilesFor(int64_t q_tile, int64_t query_tile, int64_t key_tile,
                                               int64_t T, int64_t window) {
  const int64_t q0 = q_tile * query_tile;
  int64_t q1 = q0 + query_tile - 1;  // last query of the tile
  if (q1 > T - 1) q1 = T - 1;
  int64_t lo = window > 0 ? q0 - window + 1 : 0;  // first key any of its queries sees
  if (lo < 0) lo = 0;
  return {lo / key_tile, q1 / key_tile + 1};
}

// Query tiles that key tile `k_tile` is needed by.
ONSET_HOST_DEVICE inline TileRange QueryTilesFor(int64_t k_tile, int64_t key_tile,
                                                 int64_t query_tile, int64_t T, int64_t window) {
  const int64_t k0 = k_tile * key_tile;
  int64_t k1 = k0 + key_tile - 1;
  if (k1 > T - 1) k1 = T - 1;
  int64_t hi = window > 0 ? k1 + window - 1 : T - 1;  // last query that sees any of its keys
  if (hi > T - 1) hi = T - 1;
  return {k0 / query_tile, hi / query_tile + 1};
}

}  // namespace onset::kernels
