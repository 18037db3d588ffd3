// The tiled CPU attention (cpu_tiled_attention.h) against the fp64 reference, forward and every
// gradient, on shapes that leave partial tiles, windows inside one tile and across several,
// grouped- and multi-query heads and the strided views the model passes; the controls: a
// reference one key wider differs, and the thread count changes nothing.
#include "model/nn/cpu_tiled_attention.h"

#include <gtest/gtest.h>
#include <torch/autograd.h>

#include <ATen/Parallel.h>

#include <tuple>
#include <vector>

#include "model/config/cell_config.h"
#include "model/nn/attention.h"
#include "model/nn/attention_backend.h"
#include "tests/model/nn/short_training_run.h"

namespace onset::model {
namespace {

struct Case {
  int64_t B, H, G, T, D, window;
};

struct Result {
  at::Tensor out;
  std::vector<at::Tensor> grads;  // dq, dk, dv
};

// q (B, H, T, D), k and v (B, G, T, D) float32, and an upstream gradient of the output's shape.
struct Inputs {
  at::Tensor q, k, v, up;
};

Inputs MakeInputs(const Case& c, uint64_t seed) {
  at::manual_seed(seed);
  return {at::randn({c.B, c.H, c.T, c.D}), at::randn({c.B, c.G, c.T, c.D}),
          at::randn({c.B, c.G, c.T, c.D}), at::randn({c.B, c.H, c.T, c.D})};
}

Result Run(const Inputs& in,
           const std::function<at::Tensor(const at::Tensor&, const at::Tensor&, const at::Tensor&)>&
               attend,
           at::ScalarType dtype) {
  at::Tensor q = in.q.to(dtype).requires_grad_(true);
  at::Tensor k = in.k.to(dtype).requires_grad_(true);
  at::Tensor v = in.v.to(dtype).requires_grad_(true);
  at::Tensor out = attend(q, k, v);
  auto grads = torch::autograd::grad({out}, {q, k, v}, {in.up.to(dtype)});
  return {out.detach(), {grads[0], grads[1], grads[2]}};
}

Result Tiled(const Inputs& in, int64_t window) {
  return Run(
      in,
      [&](const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
        return TiledCausalAttention(q, k, v, window);
      },
      at::kFloat);
}

Result Reference(const Inputs& in, int64_t window) {
  return Run(
      in,
      [&](const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
        const int64_t groups = q.size(1) / k.size(1);
        return ReferenceAttention(q, RepeatKv(k, groups), RepeatKv(v, groups), window);
      },
      at::kDouble);
}

// The largest difference of a and b relative to b's largest magnitude (at least 1: a gradient
// that is zero by construction, as dq and dk with window 1, compares absolutely), over the
// output and the three gradients.
double WorstRelative(const Result& a, const Result& b) {
  std::vector<std::pair<at::Tensor, at::Tensor>> pairs = {{a.out, b.out}};
  for (int i = 0; i < 3; ++i) pairs.emplace_back(a.grads[i], b.grads[i]);
  double worst = 0;
  for (const auto& [x, y] : pairs) {
    EXPECT_EQ(x.sizes(), y.sizes());
    const double scale = std::max(1.0, y.abs().max().item<double>());
    worst =
        std::max(worst, (x.to(at::kDouble) - y.to(at::kDouble)).abs().max().item<double>() / scale);
  }
  return worst;
}

class TiledAttentionTest : public ::testing::TestWithParam<Case> {};

TEST_P(TiledAttentionTest, MatchesTheReferenceForwardAndBackward) {
  const Case c = GetParam();
  const Inputs in = MakeInputs(c, 5);
  EXPECT_LT(WorstRelative(Tiled(in, c.window), Reference(in, c.window)), 2e-5);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, TiledAttentionTest,
    ::testing::Values(Case{2, 4, 4, 37, 8, 0},      // one partial tile
                      Case{1, 2, 2, 1, 4, 0},       // one position
                      Case{1, 2, 2, 64, 16, 0},     // exactly one tile
                      Case{2, 2, 1, 200, 16, 0},    // MQA, three tiles and a part
                      Case{1, 6, 3, 150, 8, 5},     // GQA, a window inside a tile
                      Case{1, 4, 2, 300, 16, 1},    // window 1: each query sees itself
                      Case{1, 2, 2, 257, 8, 100},   // a window across tiles
                      Case{1, 2, 2, 129, 8, 64},    // a window of one tile
                      Case{2, 2, 2, 90, 8, 90},     // window T: full causal
                      Case{1, 2, 2, 40, 8, 500},    // window past T
                      Case{1, 2, 1, 1100, 8, 0},    // a long sequence, 18 tiles
                      Case{1, 2, 1, 1100, 8, 300})  // and a window across five tiles
);

// The model passes q, k and v as (B, T, N, D) projections transposed: the kernel reads them in
// place and answers what it answers on contiguous copies, bit for bit.
TEST(TiledAttentionStridesTest, StridedViewsGiveWhatContiguousCopiesGive) {
  at::manual_seed(3);
  const int64_t B = 2, T = 150, H = 4, G = 2, D = 16;
  at::Tensor qkv = at::randn({B, T, H + 2 * G, D});        // (B, T, H+2G, D)
  at::Tensor q = qkv.narrow(2, 0, H).transpose(1, 2);      // (B, H, T, D), strided
  at::Tensor k = qkv.narrow(2, H, G).transpose(1, 2);      // (B, G, T, D), strided
  at::Tensor v = qkv.narrow(2, H + G, G).transpose(1, 2);  // (B, G, T, D), strided
  ASSERT_FALSE(q.is_contiguous());
  const Inputs strided{q, k, v, at::randn({B, H, T, D})};
  const Inputs copies{q.contiguous(), k.contiguous(), v.contiguous(), strided.up};
  const Result a = Tiled(strided, 0), b = Tiled(copies, 0);
  EXPECT_TRUE(at::equal(a.out, b.out));
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(at::equal(a.grads[i], b.grads[i])) << i;
}

// A LibTorch without an exported sgemm takes at::mm for the products: the same function.
TEST(TiledAttentionBlasTest, TheProductsThroughAtMmGiveTheSameFunction) {
  const Case c{2, 4, 2, 150, 16, 40};
  const Inputs in = MakeInputs(c, 12);
  EXPECT_TRUE(TiledAttentionUsesSgemm());  // this LibTorch (the torch wheel) exports it
  const Result blas = Tiled(in, c.window);
  SetTiledAttentionUsesSgemm(false);
  const Result mm = Tiled(in, c.window);
  SetTiledAttentionUsesSgemm(true);
  EXPECT_LT(WorstRelative(mm, blas), 1e-5);
  EXPECT_LT(WorstRelative(mm, Reference(in, c.window)), 2e-5);
}

// A head's work is one task whatever the thread count: 1 and 2 threads give the same bits.
TEST(TiledAttentionThreadsTest, OneAndTwoThreadsGiveTheSameBits) {
  const Case c{2, 4, 2, 130, 16, 0};
  const Inputs in = MakeInputs(c, 9);
  const int threads = at::get_num_threads();
  at::set_num_threads(1);
  const Result one = Tiled(in, 0);
  at::set_num_threads(2);
  const Result two = Tiled(in, 0);
  at::set_num_threads(threads);
  EXPECT_TRUE(at::equal(one.out, two.out));
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(at::equal(one.grads[i], two.grads[i])) << i;
}

// The control: the comparison above would notice a window off by one key.
TEST(TiledAttentionControlTest, AReferenceOneKeyWiderDiffers) {
  const Case c{1, 2, 2, 100, 8, 7};
  const Inputs in = MakeInputs(c, 5);
  EXPECT_GT(WorstRelative(Tiled(in, 7), Reference(in, 8)), 1e-2);
  EXPECT_GT(WorstRelative(Tiled(in, 0), Reference(in, 99)), 1e-3);
}

// Large and far apart scores: the softmax subtracts each row's maximum and the exp's clamp keeps
// vanishing probabilities at zero, so nothing overflows or turns NaN.
TEST(TiledAttentionRangeTest, LargeScoresStayFinite) {
  const Case c{1, 2, 2, 70, 8, 0};
  Inputs in = MakeInputs(c, 2);
  in.q = in.q * 40;
  in.k = in.k * 40;
  const Result got = Tiled(in, 0);
  EXPECT_TRUE(at::isfinite(got.out).all().item<bool>());
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(at::isfinite(got.grads[i]).all().item<bool>()) << i;
  EXPECT_LT(WorstRelative(got, Reference(in, 0)), 1e-4);
}

TEST(TiledAttentionInputsTest, OtherDtypesDevicesAndShapesAreRefusedWithTheirShapes) {
  at::Tensor q = at::randn({1, 2, 8, 4}), k = at::randn({1, 2, 8, 4});
  EXPECT_TRUE(TiledAttentionTakes(q));
  EXPECT_FALSE(TiledAttentionTakes(q.to(at::kDouble)));
  EXPECT_FALSE(TiledAttentionTakes(q.to(at::kBFloat16)));
  EXPECT_THROW(TiledCausalAttention(q.to(at::kDouble), k, k, 0), c10::Error);
  at::Tensor k3 = at::randn({1, 3, 8, 4});  // 3 key heads do not divide 2 query heads
  try {
    TiledCausalAttention(q, k3, k3, 0);
    ADD_FAILURE() << "no error";
  } catch (const c10::Error& e) {
    EXPECT_NE(std::string(e.what()).find("[1, 3, 8, 4]"), std::string::npos) << e.what();
  }
  EXPECT_EQ(AttentionBackendUnavailable(AttentionBackend::kTiled, at::Device(at::kCPU)),
            std::nullopt);
}

// A training run's losses with the tiled kernel and with SDPA (sdpa-band: LibTorch's causal and
// band-masked forms), on a model with a sliding-window and a full layer and grouped-query heads:
// within 1e-4 (relative) over 40 steps, the tolerance docs/trainer.md states; each backend run
// twice gives the same losses, so a difference is the kernels'.
TEST(TiledAttentionTrainingTest, LossesMatchSdpaWithinTheStatedTolerance) {
  CellConfig cell;
  auto error = ParseCellConfig({{"model",
                                 {{"layers", 2},
                                  {"d_model", 32},
                                  {"heads", 4},
                                  {"kv_heads", 2},
                                  {"seq_len", 80},
                                  {"arch", "swa:1"},
                                  {"window", 24},
                                  {"pos", "rope"}}}},
                               &cell);
  ASSERT_FALSE(error) << error->ToString();
  ASSERT_EQ(cell.model.pattern, "SF");
  const auto run = [&](AttentionBackend backend) {
    SetAttentionBackend(backend);
    std::vector<double> losses = ShortTrainingRunLosses(cell.model, /*batch=*/4);
    SetAttentionBackend(AttentionBackend::kAuto);
    return losses;
  };
  const std::vector<double> sdpa = run(AttentionBackend::kSdpaBand),
                            tiled = run(AttentionBackend::kTiled),
                            sdpa_again = run(AttentionBackend::kSdpaBand),
                            tiled_again = run(AttentionBackend::kTiled);
  EXPECT_EQ(sdpa, sdpa_again);
  EXPECT_EQ(tiled, tiled_again);
  EXPECT_GT(sdpa.front() - sdpa.back(), 0.3);  // it learned
  for (size_t i = 0; i < sdpa.size(); ++i) {
    EXPECT_NEAR(tiled[i], sdpa[i], 1e-4 * sdpa[i]) << "step " << i;
  }
}

}  // namespace
}  // namespace onset::model
