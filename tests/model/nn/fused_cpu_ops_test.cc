// The fused CPU kernels against their composite forms (fused_cpu_ops.h): the same values and
// gradients within 1e-5, on shapes that leave remainders, with and without weights; the
// composite control differs when a kernel is broken on purpose (a wrong eps).
#include "model/nn/fused_cpu_ops.h"

#include <gtest/gtest.h>

#include "model/config/cell_config.h"
#include "tests/model/nn/short_training_run.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

namespace onset::model {
namespace {

std::vector<at::Tensor> Inputs(const at::Tensor& a, const at::Tensor& b = at::Tensor()) {
  std::vector<at::Tensor> out;
  out.push_back(a);
  if (b.defined()) out.push_back(b);
  return out;
}

// Forward values and every input's gradient of `f` and `g` on the same inputs and upstream
// gradient; the largest difference relative to the largest magnitude of each.
double MaxDifference(const std::function<at::Tensor(const std::vector<at::Tensor>&)>& f,
                     const std::function<at::Tensor(const std::vector<at::Tensor>&)>& g,
                     const std::vector<at::Tensor>& inputs) {
  const auto run = [&](const auto& fn) {
    std::vector<at::Tensor> leaves;
    for (const at::Tensor& t : inputs) leaves.push_back(t.detach().clone().requires_grad_(true));
    at::Tensor y = fn(leaves);
    at::manual_seed(7);
    at::Tensor up = at::randn(y.sizes());  // not randn_like: a strided y would reorder it
    (y * up).sum().backward();
    std::vector<at::Tensor> out = {y.detach()};
    for (const at::Tensor& l : leaves) out.push_back(l.grad());
    return out;
  };
  const std::vector<at::Tensor> a = run(f), b = run(g);
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].sizes(), b[i].sizes()) << i;
    const double scale = std::max(1e-6, b[i].abs().max().item<double>());
    worst = std::max(worst, (a[i] - b[i]).abs().max().item<double>() / scale);
  }
  return worst;
}

TEST(FusedCpuOpsTest, RmsNormMatchesTheCompositeFormWithEveryKindOfWeight) {
  at::manual_seed(1);
  for (int threads : {1, 2}) {
    at::set_num_threads(threads);
    const at::Tensor x = at::randn({3, 37, 5, 24}) * 3;  // rows not a multiple of the grain
    // No weight, a (D) gain, and per-head (R, D) gains as the QK-norm's.
    std::vector<at::Tensor> weights(1);  // none
    weights.push_back(at::randn({24}));
    weights.push_back(at::randn({5, 24}));
    for (const at::Tensor& w : weights) {
      const auto fused = [&](const std::vector<at::Tensor>& in) {
        return RmsNorm(in[0], in.size() > 1 ? in[1] : at::Tensor(), 1e-6);
      };
      const auto composite = [&](const std::vector<at::Tensor>& in) {
        return CompositeRmsNorm(in[0], in.size() > 1 ? in[1] : at::Tensor(), 1e-6);
      };
      EXPECT_LT(MaxDifference(fused, composite, Inputs(x, w)), 1e-5)
          << "weight " << (w.defined() ? w.sizes() : at::IntArrayRef{}) << ", " << threads;
    }
  }
  at::set_num_threads(1);
  // A non-contiguous input (a transposed view) as the recurrent mixers' head norm gives it.
  const at::Tensor y = at::randn({2, 3, 9, 8}).transpose(1, 2);  // (2, 9, 3, 8)
  const at::Tensor w = at::randn({8});
  EXPECT_LT(MaxDifference([&](const auto& in) { return RmsNorm(in[0], in[1], 1e-6); },
                          [&](const auto& in) { return CompositeRmsNorm(in[0], in[1], 1e-6); },
                          Inputs(y, w)),
            1e-5);
  // The control: another eps is visible at this scale.
  const at::Tensor small = at::randn({4, 16}) * 1e-3;
  EXPECT_GT(
      MaxDifference([&](const auto& in) { return RmsNorm(in[0], at::Tensor(), 1e-6); },
                    [&](const auto& in) { return CompositeRmsNorm(in[0], at::Tensor(), 1e-5); },
                    Inputs(small)),
      1e-3);
}

TEST(FusedCpuOpsTest, RopeMatchesTheCompositeForm) {
  at::manual_seed(2);
  const int64_t T = 19, D = 12;
  const at::Tensor angles = at::outer(at::arange(T, at::kDouble),
                                      at::pow(10000.0, -at::arange(0, D, 2, at::kDouble) / D));
  const at::Tensor cos = angles.cos().to(at::kFloat), sin = angles.sin().to(at::kFloat);
  const at::Tensor x = at::randn({3, T, 5, D});
  EXPECT_LT(
      MaxDifference([&](const auto& in) { return RopeBTND(in[0], cos, sin); },
                    [&](const auto& in) { return CompositeRopeBTND(in[0], cos, sin); }, Inputs(x)),
      1e-6);
  // A strided view (queries and keys split from one projection) is read as it is.
  const at::Tensor wide = at::randn({3, T, 7, D}).narrow(2, 1, 5);
  EXPECT_LT(MaxDifference([&](const auto& in) { return RopeBTND(in[0], cos, sin); },
                          [&](const auto& in) { return CompositeRopeBTND(in[0], cos, sin); },
                          Inputs(wide)),
            1e-6);
  // The control: tables of other positions differ.
  const at::Tensor later = at::outer(at::arange(1, T + 1, at::kDouble),
                                     at::pow(10000.0, -at::arange(0, D, 2, at::kDouble) / D));
  EXPECT_GT(MaxDifference([&](const auto& in) { return RopeBTND(in[0], cos, sin); },
                          [&](const auto& in) {
                            return CompositeRopeBTND(in[0], later.cos().to(at::kFloat),
                                                     later.sin().to(at::kFloat));
                          },
                          Inputs(x)),
            1e-2);
}

TEST(FusedCpuOpsTest, ShortConvolutionMatchesTheCompositeForm) {
  at::manual_seed(4);
  for (int threads : {1, 2}) {
    at::set_num_threads(threads);
    // Kernels longer and shorter than the sequence.
    for (int64_t K : {1, 4, 9}) {
      const at::Tensor x = at::randn({3, 7, 20}), w = at::randn({20, K});
      EXPECT_LT(MaxDifference([](const auto& in) { return ShortConvSilu(in[0], in[1]); },
                              [](const auto& in) { return CompositeShortConvSilu(in[0], in[1]); },
                              Inputs(x, w)),
                1e-5)
          << "K " << K << ", " << threads;
    }
  }
  at::set_num_threads(1);
  // The control: the taps reversed are another convolution.
  const at::Tensor x = at::randn({2, 9, 6}), w = at::randn({6, 4});
  EXPECT_GT(
      MaxDifference([](const auto& in) { return ShortConvSilu(in[0], in[1]); },
                    [](const auto& in) { return CompositeShortConvSilu(in[0], in[1].flip(1)); },
                    Inputs(x, w)),
      1e-2);
}

TEST(FusedCpuOpsTest, SwiGluMatchesTheCompositeForm) {
  at::manual_seed(3);
  std::vector<at::Tensor> cases;
  cases.push_back(at::randn({4, 33, 2 * 40}) * 4);
  cases.push_back(at::randn({5, 2 * 3}));
  for (const at::Tensor& gate_up : cases) {
    EXPECT_LT(MaxDifference([](const auto& in) { return SwiGluActivation(in[0]); },
                            [](const auto& in) { return CompositeSwiGluActivation(in[0]); },
                            Inputs(gate_up)),
              1e-5)
        << gate_up.sizes();
  }
}

TEST(FusedCpuOpsTest, OtherDtypesAndTheSwitchTakeTheCompositeForm) {
  const at::Tensor x = at::randn({4, 8}, at::kDouble);
  EXPECT_TRUE(at::equal(RmsNorm(x, at::Tensor(), 1e-6), CompositeRmsNorm(x, at::Tensor(), 1e-6)));
  SetFusedCpuOps(false);
  const at::Tensor f = at::randn({6, 10});
  EXPECT_TRUE(at::equal(SwiGluActivation(f), CompositeSwiGluActivation(f)));
  SetFusedCpuOps(true);
  EXPECT_TRUE(FusedCpuOps());
  EXPECT_THROW(RmsNorm(at::randn({4, 8}), at::randn({7}), 1e-6), c10::Error);
}

// A training run's losses with the fused kernels and with the composite forms, on a model that
// has every one of them (RMSNorm, QK-norm gains, RoPE, the short convolution, SwiGLU, the D
// mixer's head norm): within 1e-4 (relative) over 40 steps, the tolerance docs/trainer.md states;
// with the composite forms on both sides, identical.
TEST(FusedCpuOpsTest, ATrainingRunsLossesMatchTheCompositeFormsWithinTheStatedTolerance) {
  CellConfig cell;
  auto error = ParseCellConfig({{"model",
                                 {{"layers", 2},
                                  {"d_model", 32},
                                  {"heads", 2},
                                  {"seq_len", 32},
                                  {"arch", "gdn:1"},
                                  {"short_conv", true},
                                  {"pos", "rope"}}}},
                               &cell);
  ASSERT_FALSE(error) << error->ToString();
  ASSERT_TRUE(cell.model.qk_norm);
  ASSERT_TRUE(cell.model.LayerUsesShortConv(0));
  const auto run = [&](bool fused) {
    SetFusedCpuOps(fused);
    std::vector<double> losses = ShortTrainingRunLosses(cell.model, /*batch=*/8);
    SetFusedCpuOps(true);
    return losses;
  };
  const std::vector<double> composite = run(false), fused = run(true), again = run(false);
  EXPECT_EQ(composite, again);  // the control: deterministic, so a difference is the kernels'
  EXPECT_GT(composite.front() - composite.back(), 0.5);  // it learned
  for (size_t i = 0; i < composite.size(); ++i) {
    EXPECT_NEAR(fused[i], composite[i], 1e-4 * composite[i]) << "step " << i;
  }
}

}  // namespace
}  // namespace onset::model
