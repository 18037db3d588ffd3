#include "model/nn/attention.h"

#include <gtest/gtest.h>

#include <tuple>

#include <ATen/CPUGeneratorImpl.h>

#include "model/nn/rope.h"

namespace onset::model {
namespace {

struct Qkv {
  at::Tensor q, k, v;  // (B, H, T, D)
};

Qkv Random(int64_t T, int64_t seed, int64_t B = 2, int64_t H = 3, int64_t D = 8) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  return {at::randn({B, H, T, D}, gen, at::kFloat), at::randn({B, H, T, D}, gen, at::kFloat),
          at::randn({B, H, T, D}, gen, at::kFloat)};
}

TEST(AttentionTest, BandMaskFollowsTheWindowRule) {
  at::Tensor m = CausalBandMask(6, 3, at::kCPU);
  for (int i = 0; i < 6; ++i) {
    for (int j = 0; j < 6; ++j) {
      EXPECT_EQ(m[i][j].item<bool>(), j <= i && i - j < 3) << i << "," << j;
    }
  }
}

// The reference itself: with window w, output i is a convex combination of v[j] for
// i - w < j <= i; checked by perturbing one value outside the window.
TEST(AttentionTest, ReferenceIgnoresKeysOutsideTheWindow) {
  Qkv x = Random(12, 1);
  at::Tensor base = ReferenceAttention(x.q, x.k, x.v, 4);
  at::Tensor v2 = x.v.clone();
  v2.select(2, 3).add_(100.0);  // position 3 is visible to queries 3..6 only
  at::Tensor moved = ReferenceAttention(x.q, x.k, v2, 4);
  at::Tensor changed = (moved - base).abs().amax({0, 1, 3}) > 1e-4;  // (T)
  for (int i = 0; i < 12; ++i) EXPECT_EQ(changed[i].item<bool>(), i >= 3 && i <= 6) << i;
}

TEST(AttentionTest, SlidingWindowEqualsMaskedFullAttention) {
  // (T, w): windows below, at and above T; T not a multiple of w.
  for (auto [T, w] : std::vector<std::pair<int64_t, int64_t>>{
           {1, 1}, {7, 1}, {16, 4}, {17, 4}, {33, 5}, {64, 8}, {30, 29}, {12, 12}, {12, 50}}) {
    Qkv x = Random(T, T * 100 + w);
    at::Tensor ref = ReferenceAttention(x.q, x.k, x.v, w);
    EXPECT_TRUE(at::allclose(BandMaskAttention(x.q, x.k, x.v, w), ref, 1e-4, 1e-5))
        << "band T=" << T << " w=" << w;
    EXPECT_TRUE(at::allclose(BlockedSlidingWindowAttention(x.q, x.k, x.v, w), ref, 1e-4, 1e-5))
        << "blocked T=" << T << " w=" << w;
    EXPECT_TRUE(at::allclose(CausalAttention(x.q, x.k, x.v, w), ref, 1e-4, 1e-5))
        << "dispatch T=" << T << " w=" << w;
  }
}

TEST(AttentionTest, WindowAtLeastTIsFullCausal) {
  Qkv x = Random(20, 9);
  at::Tensor full = ReferenceAttention(x.q, x.k, x.v, 0);
  EXPECT_TRUE(at::allclose(FullCausalAttention(x.q, x.k, x.v), full, 1e-4, 1e-5));
  EXPECT_TRUE(at::allclose(ReferenceAttention(x.q, x.k, x.v, 20), full, 1e-5, 1e-6));
  EXPECT_TRUE(at::allclose(CausalAttention(x.q, x.k, x.v, 64), full, 1e-4, 1e-5));
  EXPECT_FALSE(at::allclose(ReferenceAttention(x.q, x.k, x.v, 5), full, 1e-4, 1e-5));
}

TEST(AttentionTest, BlockedGradientsMatchTheReference) {
  Qkv x = Random(19, 5, 1, 2, 4);
  auto grads = [&](bool blocked) {
    at::Tensor q = x.q.clone().requires_grad_(), k = x.k.clone().requires_grad_(),
               v = x.v.clone().requires_grad_();
    at::Tensor y =
        blocked ? BlockedSlidingWindowAttention(q, k, v, 4) : ReferenceAttention(q, k, v, 4);
    (y * y).sum().backward();
    return std::make_tuple(q.grad(), k.grad(), v.grad());
  };
  auto [gq, gk, gv] = grads(true);
  auto [rq, rk, rv] = grads(false);
  EXPECT_TRUE(at::allclose(gq, rq, 1e-4, 1e-4));
  EXPECT_TRUE(at::allclose(gk, rk, 1e-4, 1e-4));
  EXPECT_TRUE(at::allclose(gv, rv, 1e-4, 1e-4));
}

TEST(RopeTest, ScoresDependOnlyOnTheRelativeOffset) {
  const int64_t T = 10, D = 16;
  auto gen = at::make_generator<at::CPUGeneratorImpl>(3);
  at::Tensor q = at::randn({1, 1, T, D}, gen, at::kFloat);
  at::Tensor k = at::randn({1, 1, T, D}, gen, at::kFloat);
  auto scores = [&](int64_t offset) {
    RopeTables rope = RopeTables::Make(offset, T, D, 10000.0, at::kCPU);
    return at::matmul(ApplyRope(q, rope), ApplyRope(k, rope).transpose(-2, -1));  // (1, 1, T, T)
  };
  at::Tensor a = scores(0), b = scores(37), c = scores(1000);
  EXPECT_TRUE(at::allclose(a, b, 1e-4, 1e-4));
  EXPECT_TRUE(at::allclose(a, c, 1e-3, 1e-3));
  // Without rotation the scores differ: RoPE does change them.
  EXPECT_FALSE(at::allclose(a, at::matmul(q, k.transpose(-2, -1)), 1e-3, 1e-3));
  // A rotation preserves norms.
  RopeTables rope = RopeTables::Make(5, T, D, 10000.0, at::kCPU);
  EXPECT_TRUE(at::allclose(ApplyRope(q, rope).norm(2, -1), q.norm(2, -1), 1e-5, 1e-5));
}

}  // namespace
}  // namespace onset::model
