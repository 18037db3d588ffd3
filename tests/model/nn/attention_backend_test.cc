// Every attention backend computes attention.h's function: on the CPU all of them are checked
// here against the fp64 reference, forward and gradients, with grouped-query attention, odd
// sequence lengths and windows from 1 to "none". The CUDA-only backends are checked on a GPU
// by tests/kernels/ (label gpu).
#include "model/nn/attention_backend.h"

#include <gtest/gtest.h>
#include <torch/autograd.h>

#include <tuple>

#include "model/nn/attention.h"

namespace onset::model {
namespace {

struct Case {
  int64_t B, H, G, T, D, window;
};

class CpuBackendTest : public ::testing::TestWithParam<std::tuple<AttentionBackend, Case>> {};

TEST_P(CpuBackendTest, MatchesTheReferenceForwardAndBackward) {
  const auto [backend, c] = GetParam();
  at::manual_seed(7);
  auto opts = at::TensorOptions().dtype(at::kDouble);
  at::Tensor q = at::randn({c.B, c.H, c.T, c.D}, opts).requires_grad_(true);
  at::Tensor k = at::randn({c.B, c.G, c.T, c.D}, opts).requires_grad_(true);
  at::Tensor v = at::randn({c.B, c.G, c.T, c.D}, opts).requires_grad_(true);
  at::Tensor grad = at::randn({c.B, c.H, c.T, c.D}, opts);

  at::Tensor got = Attention(q, k, v, c.window, backend);  // (B, H, T, D)
  auto got_grads = torch::autograd::grad({got}, {q, k, v}, {grad});
  const int64_t groups = c.H / c.G;
  at::Tensor want = ReferenceAttention(q, RepeatKv(k, groups), RepeatKv(v, groups), c.window);
  auto want_grads = torch::autograd::grad({want}, {q, k, v}, {grad});

  ASSERT_EQ(got.sizes(), want.sizes());
  EXPECT_TRUE(at::allclose(got, want, 1e-9, 1e-9)) << (got - want).abs().max().item<double>();
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(at::allclose(got_grads[i], want_grads[i], 1e-9, 1e-9))
        << "grad " << i << ": " << (got_grads[i] - want_grads[i]).abs().max().item<double>();
  }
}

INSTANTIATE_TEST_SUITE_P(
    Backends, CpuBackendTest,
    ::testing::Combine(::testing::Values(AttentionBackend::kAuto, AttentionBackend::kSdpaBand,
                                         AttentionBackend::kBlocked, AttentionBackend::kMath),
                       ::testing::Values(Case{2, 4, 4, 37, 8, 5},    // odd T, window 5
                                         Case{1, 4, 2, 50, 16, 1},   // GQA, window 1
                                         Case{1, 6, 3, 33, 8, 16},   // GQA, 2W < T
                                         Case{2, 2, 1, 21, 8, 0},    // MQA, no window
                                         Case{1, 2, 2, 9, 4, 64})),  // window past T
    [](const auto& info) {
      std::string name = AttentionBackendName(std::get<0>(info.param));
      for (char& ch : name) ch = ch == '-' ? '_' : ch;
      return name + "_" + std::to_string(info.index);
    });

TEST(AttentionBackendTest, NamesRoundTripAndUnknownOnesAreRefused) {
  for (AttentionBackend b :
       {AttentionBackend::kAuto, AttentionBackend::kCustom, AttentionBackend::kFlash,
        AttentionBackend::kSdpaBand, AttentionBackend::kBlocked, AttentionBackend::kMath,
        AttentionBackend::kTiled}) {
    EXPECT_EQ(ParseAttentionBackend(AttentionBackendName(b)), b);
  }
  EXPECT_FALSE(ParseAttentionBackend("fast").has_value());
  EXPECT_EQ(AttentionBackendNames(), "auto, custom, flash, sdpa-band, blocked, math, tiled");
}

TEST(AttentionBackendTest, CudaOnlyBackendsSayWhyTheyCannotRunOnTheCpu) {
  const at::Device cpu(at::kCPU);
  EXPECT_TRUE(AttentionBackendUnavailable(AttentionBackend::kCustom, cpu).has_value());
  EXPECT_TRUE(AttentionBackendUnavailable(AttentionBackend::kFlash, cpu).has_value());
  EXPECT_FALSE(AttentionBackendUnavailable(AttentionBackend::kBlocked, cpu).has_value());
  at::Tensor x = at::randn({1, 2, 8, 64});
  EXPECT_THROW(Attention(x, x, x, 4, AttentionBackend::kCustom), c10::Error);
}

// On the CPU, auto takes the tiled kernel for float32 (the same bits) while a tile sees at most
// 1024 keys, and another path for float64, which the tiled kernel does not take.
TEST(AttentionBackendTest, AutoTakesTheTiledKernelForFloat32OnTheCpu) {
  at::manual_seed(1);
  at::Tensor q = at::randn({2, 4, 70, 8}), k = at::randn({2, 2, 70, 8});
  for (int64_t window : {0, 9}) {
    EXPECT_TRUE(at::equal(Attention(q, k, k, window, AttentionBackend::kAuto),
                          Attention(q, k, k, window, AttentionBackend::kTiled)));
  }
  // Past 1024 keys a tile, full attention goes back to SDPA; a window keeps the tiles small.
  at::Tensor ql = at::randn({1, 2, 1100, 8}), kl = at::randn({1, 1, 1100, 8});
  EXPECT_TRUE(at::equal(Attention(ql, kl, kl, 0, AttentionBackend::kAuto),
                        Attention(ql, kl, kl, 0, AttentionBackend::kSdpaBand)));
  EXPECT_TRUE(at::equal(Attention(ql, kl, kl, 100, AttentionBackend::kAuto),
                        Attention(ql, kl, kl, 100, AttentionBackend::kTiled)));
  at::Tensor q64 = q.to(at::kDouble), k64 = k.to(at::kDouble);
  EXPECT_EQ(Attention(q64, k64, k64, 0, AttentionBackend::kAuto).scalar_type(), at::kDouble);
  EXPECT_THROW(Attention(q64, k64, k64, 0, AttentionBackend::kTiled), c10::Error);
  EXPECT_TRUE(
      AttentionBackendUnavailable(AttentionBackend::kTiled, at::Device(at::kCUDA, 0)).has_value());
}

}  // namespace
}  // namespace onset::model
