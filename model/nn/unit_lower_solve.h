// The recurrent D mixer's UT transform solves (I + A) X = R for every chunk, A strictly lower
// triangular (C, C) and R (C, M): C = 64 rows of a few dozen columns, thousands of times a step.
// at::linalg_solve_triangular hands each to LAPACK's strsm, which is slow at that size (11 GFLOP/s
// on one core). UnitLowerSolve runs forward substitution a row at a time, each row's update one
// vectorised pass over M, and its backward the same way:
//
//   X = (I + A)^-1 R                 forward substitution      (..., C, M)
//   dR = (I + A)^-T dX               back substitution         (..., C, M)
//   dA = -strictly_lower(dR X^T)     one dot per entry         (..., C, C)
//
// It computes what CompositeUnitLowerSolve (linalg_solve_triangular with unitriangular) computes
// up to rounding (another order of the sums; tests/model/nn/unit_lower_solve_test.cc holds it to
// 1e-5). Only A's strictly lower part is read; its diagonal and upper part get zero gradient.
// Float32 CPU tensors take the kernel, unless SetFusedCpuOps(false); anything else the composite.
#pragma once

#include <ATen/ATen.h>

namespace onset::model {

// A (..., C, C), rhs (..., C, M) with the same leading dims -> X (..., C, M).
at::Tensor UnitLowerSolve(const at::Tensor& A, const at::Tensor& rhs);
at::Tensor CompositeUnitLowerSolve(const at::Tensor& A, const at::Tensor& rhs);

}  // namespace onset::model
