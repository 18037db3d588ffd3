// The shapes on which every CUDA attention backend is compared with the fp64 reference, forward
// and all gradients, in bf16, fp16 and fp32: shared by the GPU tests
// (tests/kernels/swa_attention_gpu_test.cc) and `onset-attention-bench --check`, so the two
// never drift apart. Host-only; tests/kernels/swa_tiles_test.cc checks on any machine that the
// list still reaches the kernels' divergent rows (see below).
#pragma once

#include <cstdint>

namespace onset::kernels {

struct CheckCase {
  int64_t B, H, G, T, D, window;
};

// Each (T, D, window, G) appears once: the GPU tests are named after them.
inline constexpr CheckCase kCheckCases[] = {
    // Odd sizes, grouped-query attention, windows from 1 to none.
    {2, 4, 4, 37, 64, 5},
    {1, 8, 2, 300, 128, 64},
    {1, 4, 1, 129, 64, 0},
    {1, 2, 2, 65, 128, 1},
    {1, 4, 2, 1000, 128, 257},
    // Rows of one warp that part ways inside a tile. The forward kernel puts 8 query rows in a
    // warp and walks 32-key tiles. A window of w > 1 keys with w % 32 != 1 ends inside the
    // first key tile each query tile visits (once it no longer reaches key 0), so that tile
    // reaches some rows of a warp and not others (w = 33 starts on a tile boundary and splits
    // nothing: kept as that edge). A
    // length with T % 8 != 0 (the NIAH prefill lengths 127, 255, 511) puts rows past T in the
    // warp of the last real row; 1000 leaves whole warps past T and a partial last tile.
    {1, 2, 1, 127, 64, 5},
    {1, 2, 2, 127, 128, 100},
    {1, 4, 2, 255, 128, 33},
    {1, 2, 2, 255, 64, 0},
    {1, 2, 2, 511, 64, 100},
    {1, 4, 2, 511, 128, 50},
    {1, 4, 4, 1000, 64, 5},
    {2, 2, 1, 1000, 128, 100},
};

}  // namespace onset::kernels
