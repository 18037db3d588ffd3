#include "model/nn/rope.h"

#include <vector>

#include "model/nn/fused_cpu_ops.h"

namespace onset::model {

RopeTables RopeTables::Make(int64_t offset, int64_t T, int64_t D, double base,
                            const at::Device& device) {
  auto f64 = at::TensorOptions().dtype(at::kDouble).device(device);
  at::Tensor inv_freq = at::pow(base, -at::arange(0, D, 2, f64) / static_cast<double>(D));  // (D/2)
  at::Tensor pos = at::arange(offset, offset + T, f64);                                     // (T)
  at::Tensor angles = at::outer(pos, inv_freq);  // (T, D/2)
  return {angles.cos().to(at::kFloat), angles.sin().to(at::kFloat)};
}

at::Tensor ApplyRope(const at::Tensor& x, const RopeTables& rope, int64_t time_dim) {
  // (B, T, N, D), the training layout: one pass on the CPU (fused_cpu_ops.h).
  if (time_dim == 1 && x.dim() == 4) return RopeBTND(x, rope.cos, rope.sin);
  const int64_t half = x.size(-1) / 2;
  // Tables shaped (T, 1, ..., 1, D/2) to broadcast over the dims between T and D.
  std::vector<int64_t> shape(static_cast<size_t>(x.dim() - time_dim), 1);
  shape.front() = x.size(time_dim);
  shape.back() = half;
  at::Tensor cos = rope.cos.to(x.scalar_type()).view(shape);       // (T, 1.., D/2)
  at::Tensor sin = rope.sin.to(x.scalar_type()).view(shape);       // (T, 1.., D/2)
  at::Tensor x1 = x.narrow(-1, 0, half);                           // (..., T, .., D/2)
  at::Tensor x2 = x.narrow(-1, half, half);                        // (..., T, .., D/2)
  return at::cat({x1 * cos - x2 * sin, x1 * sin + x2 * cos}, -1);  // x's shape
}

}  // namespace onset::model
