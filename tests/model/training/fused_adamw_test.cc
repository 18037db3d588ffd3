// The fused AdamW update against torch::optim::AdamW: the same update up to rounding, the same
// state and checkpoint format, and a training run's losses within the tolerance docs/trainer.md
// states.
#include "model/training/fused_adamw.h"

#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include <ATen/ATen.h>
#include <torch/serialize.h>

#include "model/config/cell_config.h"
#include "model/config/vocab.h"
#include "model/nn/transformer.h"
#include "model/training/optimizer.h"

namespace onset::model {
namespace {

using torch::optim::AdamW;
using torch::optim::AdamWOptions;
using torch::optim::AdamWParamState;

// Two groups as the trainer makes them: decayed matrices, undecayed vectors.
std::vector<torch::optim::OptimizerParamGroup> Groups(const std::vector<at::Tensor>& decay,
                                                      const std::vector<at::Tensor>& no_decay) {
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(decay, std::make_unique<AdamWOptions>(
                                 AdamWOptions(3e-3).betas({0.9, 0.95}).weight_decay(0.1)));
  groups.emplace_back(no_decay, std::make_unique<AdamWOptions>(
                                    AdamWOptions(3e-3).betas({0.9, 0.95}).weight_decay(0.0)));
  return groups;
}

std::vector<at::Tensor> Copies(const std::vector<at::Tensor>& params) {
  std::vector<at::Tensor> out;
  for (const at::Tensor& p : params) out.push_back(p.detach().clone().requires_grad_(true));
  return out;
}

double MaxRelativeDifference(const std::vector<at::Tensor>& a, const std::vector<at::Tensor>& b) {
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double scale = std::max(1e-3, a[i].abs().max().item<double>());
    worst = std::max(worst, (a[i] - b[i]).abs().max().item<double>() / scale);
  }
  return worst;
}

TEST(FusedAdamWTest, UpdatesAsAdamWDoesUpToRounding) {
  at::manual_seed(1);
  const std::vector<at::Tensor> start = {at::randn({64, 32}), at::randn({32, 64}), at::randn({32}),
                                         at::randn({7})};
  std::vector<at::Tensor> a = Copies(start), b = Copies(start);
  AdamW plain(Groups({a[0], a[1]}, {a[2], a[3]}));
  FusedAdamW fused(Groups({b[0], b[1]}, {b[2], b[3]}));
  for (int step = 0; step < 200; ++step) {
    for (size_t i = 0; i < start.size(); ++i) {
      const at::Tensor g = at::randn_like(start[i]) * (1.0 + step % 7);
      a[i].mutable_grad() = g.clone();
      b[i].mutable_grad() = g.clone();
    }
    plain.step();
    fused.step();
  }
  // Rounding alone: a few float32 ulps per step, far below a step's size (3e-3).
  EXPECT_LT(MaxRelativeDifference(a, b), 1e-5);
  for (size_t i = 0; i < start.size(); ++i) {
    auto& ps = static_cast<AdamWParamState&>(*plain.state().at(a[i].unsafeGetTensorImpl()));
    auto& fs = static_cast<AdamWParamState&>(*fused.state().at(b[i].unsafeGetTensorImpl()));
    EXPECT_EQ(ps.step(), 200);
    EXPECT_EQ(fs.step(), 200);
    // Moments of gradients of size ~1-7: a few ulps of those, absolute.
    EXPECT_TRUE(at::allclose(ps.exp_avg(), fs.exp_avg(), 1e-5, 1e-5)) << i;
    EXPECT_TRUE(at::allclose(ps.exp_avg_sq(), fs.exp_avg_sq(), 1e-5, 1e-5)) << i;
  }
  // The control: without weight decay on the first group the parameters part visibly.
  std::vector<at::Tensor> c = Copies(start);
  std::vector<torch::optim::OptimizerParamGroup> no_decay_anywhere = Groups({}, c);
  FusedAdamW other(no_decay_anywhere);
  for (int step = 0; step < 200; ++step) {
    for (size_t i = 0; i < start.size(); ++i) c[i].mutable_grad() = b[i].grad().clone();
    other.step();
  }
  EXPECT_GT(MaxRelativeDifference(b, c), 1e-3);
}

TEST(FusedAdamWTest, SkipsParametersWithoutAGradient) {
  at::Tensor p = at::ones({3}).requires_grad_(true), q = at::ones({3}).requires_grad_(true);
  FusedAdamW fused(Groups({p}, {q}));
  p.mutable_grad() = at::ones({3});
  fused.step();
  EXPECT_EQ(fused.state().count(q.unsafeGetTensorImpl()), 0u);
  EXPECT_TRUE(at::equal(q, at::ones({3})));
  EXPECT_FALSE(at::equal(p, at::ones({3})));
}

// `from`'s state saved and loaded into `to`, as a checkpoint carries it.
void CarryState(const torch::optim::Optimizer& from, torch::optim::Optimizer* to) {
  std::stringstream bytes;
  torch::serialize::OutputArchive out;
  from.save(out);
  out.save_to(bytes);
  torch::serialize::InputArchive in;
  in.load_from(bytes);
  to->load(in);
}

// A checkpoint of either optimizer loads into the other and the run goes on as it would have.
TEST(FusedAdamWTest, StateLoadsAcrossBothWays) {
  at::manual_seed(2);
  const std::vector<at::Tensor> start = {at::randn({16, 8}), at::randn({8})};
  std::vector<at::Tensor> a = Copies(start);
  FusedAdamW fused(Groups({a[0]}, {a[1]}));
  for (int step = 0; step < 5; ++step) {
    for (at::Tensor& p : a) p.mutable_grad() = at::randn_like(p);
    fused.step();
  }
  std::vector<at::Tensor> b = Copies(a);
  AdamW plain(Groups({b[0]}, {b[1]}));
  CarryState(fused, &plain);
  for (size_t i = 0; i < a.size(); ++i) {
    auto& fs = static_cast<AdamWParamState&>(*fused.state().at(a[i].unsafeGetTensorImpl()));
    auto& ps = static_cast<AdamWParamState&>(*plain.state().at(b[i].unsafeGetTensorImpl()));
    EXPECT_EQ(ps.step(), 5);
    EXPECT_TRUE(at::equal(fs.exp_avg(), ps.exp_avg()));
    EXPECT_TRUE(at::equal(fs.exp_avg_sq(), ps.exp_avg_sq()));
  }
  // And back: a FusedAdamW resumed from AdamW's state takes step 6 as the first one would.
  std::vector<at::Tensor> c = Copies(a);
  FusedAdamW resumed(Groups({c[0]}, {c[1]}));
  CarryState(plain, &resumed);
  for (size_t i = 0; i < a.size(); ++i) {
    const at::Tensor g = at::randn_like(a[i]);
    a[i].mutable_grad() = g.clone();
    c[i].mutable_grad() = g.clone();
  }
  fused.step();
  resumed.step();
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(at::equal(a[i], c[i])) << i;
}

// The losses of a short training run with each optimizer: the trajectories stay within 1e-4
// (relative) of each other over 40 steps, docs/trainer.md's tolerance.
TEST(FusedAdamWTest, ATrainingRunsLossesMatchAdamWsWithinTheStatedTolerance) {
  CellConfig cell;
  auto error = ParseCellConfig(
      {{"model",
        {{"layers", 2}, {"d_model", 32}, {"heads", 2}, {"seq_len", 32}, {"arch", "gdn:1"}}},
       {"train", {{"lr", 3e-3}, {"weight_decay", 0.1}}}},
      &cell);
  ASSERT_FALSE(error) << error->ToString();
  const auto run = [&](bool fused) {
    torch::manual_seed(3);
    Transformer model(cell.model);
    std::unique_ptr<AdamW> optimizer;
    if (fused) {
      optimizer = MakeAdamW(*model, cell.train);
    } else {
      ParamGroups g = SplitForWeightDecay(*model);
      std::vector<torch::optim::OptimizerParamGroup> groups;
      groups.emplace_back(
          g.decay, std::make_unique<AdamWOptions>(AdamWOptions(cell.train.lr)
                                                      .betas({cell.train.beta1, cell.train.beta2})
                                                      .eps(1e-8)
                                                      .weight_decay(cell.train.weight_decay)));
      groups.emplace_back(g.no_decay, std::make_unique<AdamWOptions>(
                                          AdamWOptions(cell.train.lr)
                                              .betas({cell.train.beta1, cell.train.beta2})
                                              .eps(1e-8)
                                              .weight_decay(0.0)));
      optimizer = std::make_unique<AdamW>(groups);
    }
    at::manual_seed(4);
    std::vector<double> losses;
    for (int step = 0; step < 40; ++step) {
      at::Tensor tokens = at::randint(0, 64, {8, 33}, at::kLong);  // (8, T + 1): a small alphabet
      optimizer->zero_grad();
      at::Tensor logits = model(tokens.narrow(1, 0, 32));  // (8, T, V)
      at::Tensor loss = at::cross_entropy_loss(logits.reshape({-1, logits.size(-1)}),
                                               tokens.narrow(1, 1, 32).reshape({-1}));
      loss.backward();
      optimizer->step();
      losses.push_back(loss.item<double>());
    }
    return losses;
  };
  const std::vector<double> plain = run(false), fused = run(true);
  ASSERT_EQ(plain.size(), fused.size());
  EXPECT_GT(plain.front() - plain.back(), 0.5);  // it learned: the comparison is not vacuous
  for (size_t i = 0; i < plain.size(); ++i) {
    EXPECT_NEAR(fused[i], plain[i], 1e-4 * plain[i]) << "step " << i;
  }
}

}  // namespace
}  // namespace onset::model
