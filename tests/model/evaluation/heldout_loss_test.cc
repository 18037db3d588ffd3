#include "model/evaluation/heldout_loss.h"

#include <ATen/Parallel.h>
#include <gtest/gtest.h>
#include <torch/utils.h>

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

TEST(HeldoutLossTest, EveryChunkStartsWithBosAndEveryTargetCountsOnce) {
  const std::vector<LossChunks> chunks = MakeLossChunks(Rows(), 4);
  ASSERT_EQ(chunks.size(), 2u);  // 10 targets: two chunks of 4 per row, then one of 2
  ASSERT_EQ(chunks[0].inputs.sizes(), at::IntArrayRef({4, 4}));
  EXPECT_EQ(Row(chunks[0].inputs, 0), (std::vector<int64_t>{kBos, 1, 2, 3}));
  EXPECT_EQ(Row(chunks[0].targets, 0), (std::vector<int64_t>{1, 2, 3, 4}));
  EXPECT_EQ(Row(chunks[0].inputs, 1), (std::vector<int64_t>{kBos, 5, 6, 7}));
  EXPECT_EQ(Row(chunks[0].targets, 1), (std::vector<int64_t>{5, 6, 7, 8}));
  EXPECT_EQ(Row(chunks[0].inputs, 2), (std::vector<int64_t>{kBos, 101, 102, 103}));
  ASSERT_EQ(chunks[1].inputs.sizes(), at::IntArrayRef({2, 2}));
  EXPECT_EQ(Row(chunks[1].inputs, 0), (std::vector<int64_t>{kBos, 9}));
  EXPECT_EQ(Row(chunks[1].targets, 1), (std::vector<int64_t>{109, 110}));
  // A context of the whole row (or more) is the row itself.
  for (int64_t c : {10, 64}) {
    const std::vector<LossChunks> whole = MakeLossChunks(Rows(), c);
    ASSERT_EQ(whole.size(), 1u);
    EXPECT_TRUE(at::equal(whole[0].inputs, Rows().narrow(1, 0, 10)));
    EXPECT_TRUE(at::equal(whole[0].targets, Rows().narrow(1, 1, 10)));
  }
}

TEST(HeldoutLossTest, FullContextEqualsThePlainLossAndShortContextDiffers) {
  at::set_num_threads(1);
  CellConfig c;
  ASSERT_FALSE(
      ParseCellConfig({{"model", {{"layers", 2}, {"d_model", 32}, {"heads", 2}, {"seq_len", 10}}},
                       {"eval", {{"niah_samples", 0}}}},
                      &c));
  torch::manual_seed(0);
  Transformer model(c.model);
  torch::NoGradGuard no_grad;
  const at::Tensor rows = Rows();  // tokens below 256 and BOS: all in the vocabulary
  at::Tensor logits = model(rows.narrow(1, 0, 10));  // (2, 10, V)
  const double plain = at::cross_entropy_loss(logits.reshape({-1, logits.size(-1)}),
                                              rows.narrow(1, 1, 10).reshape({-1}))
                           .item<double>();
  EXPECT_NEAR(ChunkedLoss(model, rows, 10), plain, 1e-6);
  EXPECT_NEAR(ChunkedLoss(model, rows, 1000), plain, 1e-6);
  EXPECT_NEAR(ChunkedLoss(model, rows, 10, /*rows_per_forward=*/1), plain, 1e-6);
  EXPECT_GT(std::abs(ChunkedLoss(model, rows, 3) - plain), 1e-6);
}

}  // namespace
}  // namespace onset::model
