#include "model/nn/unit_lower_solve.h"

#include <ATen/Parallel.h>
#include <torch/autograd.h>

#include "model/nn/cpu_vector.h"
#include "model/nn/fused_cpu_ops.h"

namespace onset::model {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// One matrix: x (C, M) <- (I + a)^-1 r, a (C, C) read below the diagonal.
ONSET_SIMD_CLONES void SolveOne(const float* a, const float* r, float* x, int64_t C, int64_t M) {
  for (int64_t i = 0; i < C; ++i) {
    float* xi = x + i * M;
    const float* ri = r + i * M;
#pragma omp simd
    for (int64_t m = 0; m < M; ++m) xi[m] = ri[m];
    for (int64_t j = 0; j < i; ++j) {
      const float aij = a[i * C + j];
      const float* xj = x + j * M;
#pragma omp simd
      for (int64_t m = 0; m < M; ++m) xi[m] -= aij * xj[m];
    }
  }
}

// One matrix's backward: dr (C, M) <- (I + a)^-T g by back substitution; da (C, C) <- the
// strictly lower part of -dr x^T, zeros elsewhere.
ONSET_SIMD_CLONES void SolveBackwardOne(const float* a, const float* x, const float* g, float* dr,
                                        float* da, int64_t C, int64_t M) {
  for (int64_t i = C - 1; i >= 0; --i) {
    float* di = dr + i * M;
    const float* gi = g + i * M;
#pragma omp simd
    for (int64_t m = 0; m < M; ++m) di[m] = gi[m];
    for (int64_t j = i + 1; j < C; ++j) {
      const float aji = a[j * C + i];
      const float* dj = dr + j * M;
#pragma omp simd
      for (int64_t m = 0; m < M; ++m) di[m] -= aji * dj[m];
    }
  }
  for (int64_t i = 0; i < C; ++i) {
    const float* di = dr + i * M;
    for (int64_t j = 0; j < C; ++j) {
      if (j >= i) {
        da[i * C + j] = 0.0f;
        continue;
      }
      const float* xj = x + j * M;
      float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
      for (int64_t m = 0; m < M; ++m) dot += di[m] * xj[m];
      da[i * C + j] = -dot;
    }
  }
}

// Matrices per task of at::parallel_for.
constexpr int64_t kGrainMatrices = 8;

struct UnitLowerSolveFunction : public torch::autograd::Function<UnitLowerSolveFunction> {
  // A (..., C, C), rhs (..., C, M), both contiguous -> (..., C, M).
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& A, const at::Tensor& rhs) {
    const int64_t C = rhs.size(-2), M = rhs.size(-1);
    const int64_t count = C * M == 0 ? 0 : rhs.numel() / (C * M);
    at::Tensor x = at::empty_like(rhs);  // (..., C, M)
    const float* ap = A.const_data_ptr<float>();
    const float* rp = rhs.const_data_ptr<float>();
    float* xp = x.mutable_data_ptr<float>();
    at::parallel_for(0, count, kGrainMatrices, [&](int64_t begin, int64_t end) {
      for (int64_t b = begin; b < end; ++b) {
        SolveOne(ap + b * C * C, rp + b * C * M, xp + b * C * M, C, M);
      }
    });
    ctx->save_for_backward({A, x});
    return x;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const variable_list saved = ctx->get_saved_variables();
    const at::Tensor& A = saved[0];
    const at::Tensor& x = saved[1];
    const at::Tensor g = grads[0].contiguous();
    const int64_t C = x.size(-2), M = x.size(-1);
    const int64_t count = C * M == 0 ? 0 : x.numel() / (C * M);
    at::Tensor dr = at::empty_like(x);  // (..., C, M)
    at::Tensor da = at::empty_like(A);  // (..., C, C)
    const float* ap = A.const_data_ptr<float>();
    const float* xp = x.const_data_ptr<float>();
    const float* gp = g.const_data_ptr<float>();
    float* drp = dr.mutable_data_ptr<float>();
    float* dap = da.mutable_data_ptr<float>();
    at::parallel_for(0, count, kGrainMatrices, [&](int64_t begin, int64_t end) {
      for (int64_t b = begin; b < end; ++b) {
        SolveBackwardOne(ap + b * C * C, xp + b * C * M, gp + b * C * M, drp + b * C * M,
                         dap + b * C * C, C, M);
      }
    });
    return {da, dr};
  }
};

bool TakesKernel(const at::Tensor& A, const at::Tensor& rhs) {
  return FusedCpuOps() && A.device().is_cpu() && A.scalar_type() == at::kFloat &&
         rhs.device().is_cpu() && rhs.scalar_type() == at::kFloat && A.dim() >= 2 &&
         A.dim() == rhs.dim() &&
         A.sizes().slice(0, A.dim() - 1) == rhs.sizes().slice(0, A.dim() - 1) &&
         A.size(-1) == A.size(-2);
}

}  // namespace

at::Tensor CompositeUnitLowerSolve(const at::Tensor& A, const at::Tensor& rhs) {
  return at::linalg_solve_triangular(A, rhs, /*upper=*/false, /*left=*/true,
                                     /*unitriangular=*/true);  // (..., C, M)
}

at::Tensor UnitLowerSolve(const at::Tensor& A, const at::Tensor& rhs) {
  if (!TakesKernel(A, rhs)) return CompositeUnitLowerSolve(A, rhs);
  return UnitLowerSolveFunction::apply(A.contiguous(), rhs.contiguous());  // (..., C, M)
}

}  // namespace onset::model
