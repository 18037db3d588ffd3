// The windowed loss: its windows, the full-context case, and the sliding case against a
// brute force that feeds every target its own window.
#include "model/evaluation/heldout_loss.h"

#include <ATen/Parallel.h>
#include <gtest/gtest.h>
#include <torch/utils.h>

#include <cmath>

#include "model/config/vocab.h"

namespace onset::model {
namespace {

// Two rows of BOS then 10 tokens: row r holds 100 r + 1 .. 100 r + 10.
at::Tensor Rows() {
  at::Tensor rows = at::empty({2, 11}, at::kLong);
  for (int r = 0; r < 2; ++r) {
    rows[r][0] = kBos;
    for (int i = 1; i <= 10; ++i) rows[r][i] = 100 * r + i;
  }
  return rows;
}

std::vector<int64_t> Row(const at::Tensor& t, int64_t i) {
  at::Tensor r = t[i].contiguous();
  return {r.data_ptr<int64_t>(), r.data_ptr<int64_t>() + r.numel()};
}

// Target i of a row (predicting token i + 1) with i >= c gets [BOS, row[i - c + 2 .. i]]; the
// mask skips targets.
TEST(HeldoutLossTest, WindowsEndAtTheirTargetAndStartWithBos) {
  at::Tensor mask = at::ones({2, 10}, at::kBool);
  mask[1][7] = false;
  const LossWindows w = MakeLossWindows(Rows(), mask, 4);
  // Targets 4..9 of each row, but row 1's target 7: 11 windows of 4 positions.
  ASSERT_EQ(w.inputs.sizes(), (at::IntArrayRef{11, 4}));
  EXPECT_EQ(Row(w.inputs, 0), (std::vector<int64_t>{kBos, 2, 3, 4}));  // target 4: token 5
  EXPECT_EQ(w.targets[0].item<int64_t>(), 5);
  EXPECT_EQ(Row(w.inputs, 5), (std::vector<int64_t>{kBos, 7, 8, 9}));  // target 9: token 10
  EXPECT_EQ(Row(w.inputs, 9), (std::vector<int64_t>{kBos, 106, 107, 109 - 1}));
  EXPECT_EQ(w.targets[8].item<int64_t>(), 107);  // row 1: 105, 106, 107, then 109 (no 108)
  EXPECT_EQ(w.targets[9].item<int64_t>(), 109);
  // Nothing is windowed when every target's row context fits.
  EXPECT_EQ(MakeLossWindows(Rows(), mask, 10).targets.size(0), 0);
}

CellConfig Cell() {
  CellConfig c;
  EXPECT_FALSE(
      ParseCellConfig({{"model", {{"layers", 2}, {"d_model", 32}, {"heads", 2}, {"seq_len", 10}}},
                       {"eval", {{"niah_samples", 0}}}},
                      &c));
  return c;
}

// Per target: cross-entropy of the model fed exactly min(c, i + 1) positions of context.
double BruteForce(Transformer& model, const at::Tensor& rows, const at::Tensor& mask, int64_t c) {
  const int64_t N = rows.size(0), T = rows.size(1) - 1;
  double total = 0;
  int counted = 0;
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t i = 0; i < T; ++i) {
      if (!mask[n][i].item<bool>()) continue;
      at::Tensor input =
          i + 1 <= c ? rows[n].narrow(0, 0, i + 1)
                     : at::cat({rows[n].narrow(0, 0, 1), rows[n].narrow(0, i - c + 2, c - 1)});
      at::Tensor last = model(input.unsqueeze(0)).select(1, -1);  // (1, V)
      total += at::cross_entropy_loss(last, rows[n].narrow(0, i + 1, 1)).item<double>();
      ++counted;
    }
  }
  return total / counted;
}

TEST(HeldoutLossTest, EveryTargetSeesExactlyItsWindowAndTheWholeRowBeyondIt) {
  at::set_num_threads(1);
  CellConfig c = Cell();
  torch::manual_seed(0);
  Transformer model(c.model);
  torch::NoGradGuard no_grad;
  const at::Tensor rows = Rows();  // tokens below 256 and BOS: all in the vocabulary
  at::Tensor logits = model(rows.narrow(1, 0, 10));  // (2, 10, V)
  const double plain = at::cross_entropy_loss(logits.reshape({-1, logits.size(-1)}),
                                              rows.narrow(1, 1, 10).reshape({-1}))
                           .item<double>();
  // Every target, full context: the plain loss, whatever c >= T.
  EXPECT_NEAR(WindowedLoss(model, rows, at::Tensor(), 10), plain, 1e-6);
  EXPECT_NEAR(WindowedLoss(model, rows, at::Tensor(), 1000), plain, 1e-6);
  // Some targets (background ones, say): with c >= T, the full-context loss over just those,
  // which is the brute force at c = T; with c < T, each target its own window.
  at::Tensor mask = at::rand({2, 10}) > 0.4;
  mask[0][0] = mask[0][9] = true;
  for (int64_t context : {2, 3, 5, 9}) {
    EXPECT_NEAR(WindowedLoss(model, rows, mask, context), BruteForce(model, rows, mask, context),
                1e-5)
        << context;
  }
  EXPECT_NEAR(WindowedLoss(model, rows, mask, 10), BruteForce(model, rows, mask, 10), 1e-5);
  EXPECT_DOUBLE_EQ(WindowedLoss(model, rows, mask, 10), WindowedLoss(model, rows, mask, 64));
  EXPECT_GT(std::abs(WindowedLoss(model, rows, mask, 3) - WindowedLoss(model, rows, mask, 10)),
            1e-6);
  EXPECT_TRUE(std::isnan(WindowedLoss(model, rows, at::zeros({2, 10}, at::kBool), 4)));
}

}  // namespace
}  // namespace onset::model
