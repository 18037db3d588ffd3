// Rotary position embedding (RoPE), half-split layout: the first and second halves of each
// head's D features form the (real, imaginary) pairs, pair p rotating at base^(-2p / D).
//
// Dimension letters: B batch, H heads, T positions, D head dim (even).
#pragma once

#include <cstdint>

#include <ATen/ATen.h>

namespace onset::model {

// cos and sin of the rotation angles of positions offset .. offset + T - 1.
struct RopeTables {
  at::Tensor cos;  // (T, D/2), float32
  at::Tensor sin;  // (T, D/2), float32

  static RopeTables Make(int64_t offset, int64_t T, int64_t D, double base,
                         const at::Device& device);
};

// Rotates x by the tables of its T positions; returns the same shape and dtype. Positions run
// along `time_dim`: x is (B, H, T, D) with time_dim 2 (the default), or e.g. (B, T, 2, H, D)
// with time_dim 1; every dimension after time_dim but the last is broadcast.
at::Tensor ApplyRope(const at::Tensor& x, const RopeTables& rope, int64_t time_dim = 2);

}  // namespace onset::model
