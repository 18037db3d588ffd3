// The D mixer's unit lower triangular solve (unit_lower_solve.h) against LibTorch's
// linalg_solve_triangular: the same solution and gradients within 1e-5 on chunk-sized and odd
// shapes; what lies on and above A's diagonal is not read; the control, a solve that reads the
// diagonal, differs.
#include "model/nn/unit_lower_solve.h"

#include <gtest/gtest.h>
#include <torch/autograd.h>

#include <ATen/Parallel.h>

#include <vector>

#include "model/nn/fused_cpu_ops.h"

namespace onset::model {
namespace {

struct Solved {
  at::Tensor x, dA, dR;
};

// A well-conditioned system: strictly lower entries of magnitude below 1/C, as the D mixer's
// normalised keys and gates make them.
at::Tensor LowerEntries(std::vector<int64_t> shape, uint64_t seed) {
  at::manual_seed(seed);
  const int64_t C = shape.back();
  return at::randn(shape) / static_cast<double>(C);
}

Solved Solve(const at::Tensor& A, const at::Tensor& R, bool kernel) {
  SetFusedCpuOps(kernel);
  at::Tensor a = A.detach().clone().requires_grad_(true);
  at::Tensor r = R.detach().clone().requires_grad_(true);
  at::Tensor x = UnitLowerSolve(a, r);
  at::manual_seed(7);
  at::Tensor up = at::randn(x.sizes());
  (x * up).sum().backward();
  SetFusedCpuOps(true);
  return {x.detach(), a.grad(), r.grad()};
}

double Worst(const Solved& a, const Solved& b) {
  double worst = 0;
  for (const auto& [x, y] :
       std::vector<std::pair<at::Tensor, at::Tensor>>{{a.x, b.x}, {a.dA, b.dA}, {a.dR, b.dR}}) {
    EXPECT_EQ(x.sizes(), y.sizes());
    const double scale = std::max(1.0, y.abs().max().item<double>());
    worst = std::max(worst, (x - y).abs().max().item<double>() / scale);
  }
  return worst;
}

TEST(UnitLowerSolveTest, MatchesLinalgSolveTriangularOnChunkAndOddShapes) {
  for (const std::vector<int64_t>& batch : std::vector<std::vector<int64_t>>{{4, 2, 2}, {3}, {1}}) {
    for (const auto& [C, M] : std::vector<std::pair<int64_t, int64_t>>{{64, 64}, {17, 5}, {1, 3}}) {
      std::vector<int64_t> a_shape = batch, r_shape = batch;
      a_shape.insert(a_shape.end(), {C, C});
      r_shape.insert(r_shape.end(), {C, M});
      const at::Tensor A = LowerEntries(a_shape, 3);
      const at::Tensor R = at::randn(r_shape);
      EXPECT_LT(Worst(Solve(A, R, true), Solve(A, R, false)), 1e-5) << "C=" << C << " M=" << M;
    }
  }
}

TEST(UnitLowerSolveTest, ReadsOnlyTheStrictlyLowerPart) {
  const at::Tensor A = LowerEntries({2, 20, 20}, 4);
  const at::Tensor R = at::randn({2, 20, 6});
  const Solved full = Solve(A, R, true), lower = Solve(A.tril(-1), R, true);
  EXPECT_TRUE(at::equal(full.x, lower.x));
  EXPECT_TRUE(at::equal(full.dR, lower.dR));
  EXPECT_TRUE(at::equal(full.dA, lower.dA));
  EXPECT_TRUE(at::equal(full.dA.triu(), at::zeros({2, 20, 20})));  // no gradient on or above
}

// The control: a solve that reads A's diagonal (not unit) gives another answer, so the
// comparison above would notice a kernel that did.
TEST(UnitLowerSolveTest, ASolveThatReadsTheDiagonalDiffers) {
  const at::Tensor A = LowerEntries({2, 16, 16}, 5) + at::eye(16);
  const at::Tensor R = at::randn({2, 16, 4});
  const at::Tensor read =
      at::linalg_solve_triangular(A, R, /*upper=*/false, /*left=*/true, /*unitriangular=*/false);
  EXPECT_GT((Solve(A, R, true).x - read).abs().max().item<double>(), 1e-2);
}

TEST(UnitLowerSolveTest, OneAndTwoThreadsGiveTheSameBits) {
  const at::Tensor A = LowerEntries({40, 32, 32}, 6);
  const at::Tensor R = at::randn({40, 32, 8});
  const int threads = at::get_num_threads();
  at::set_num_threads(1);
  const Solved one = Solve(A, R, true);
  at::set_num_threads(2);
  const Solved two = Solve(A, R, true);
  at::set_num_threads(threads);
  EXPECT_TRUE(at::equal(one.x, two.x));
  EXPECT_TRUE(at::equal(one.dA, two.dA));
  EXPECT_TRUE(at::equal(one.dR, two.dR));
}

TEST(UnitLowerSolveTest, OtherDtypesTakeTheCompositeForm) {
  const at::Tensor A = LowerEntries({2, 8, 8}, 8).to(at::kDouble);
  const at::Tensor R = at::randn({2, 8, 3}, at::kDouble);
  EXPECT_TRUE(at::equal(UnitLowerSolve(A, R), CompositeUnitLowerSolve(A, R)));
}

}  // namespace
}  // namespace onset::model
