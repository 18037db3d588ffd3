// The custom sliding-window kernel and LibTorch's flash backend against the fp64 reference on a
// GPU: outputs poisoned with NaN before each run, odd sizes, GQA, windows from 1 to none,
// windows and lengths that split the rows of one warp inside a tile (kernels/swa_check_cases.h),
// bf16 / fp16 / fp32 inputs, forward and gradients. Skips without a CUDA device (label gpu).
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/autograd.h>
#include <torch/cuda.h>

#include <cmath>
#include <limits>
#include <string>
#include <tuple>

#include "kernels/swa_check_cases.h"
#include "model/nn/attention.h"
#include "model/nn/attention_backend.h"
#include "model/nn/swa_flash_op.h"

#if ONSET_WITH_SWA_KERNEL
#include <ATen/cuda/CUDAContext.h>

#include "kernels/swa_attention.h"
#endif

namespace onset::model {
namespace {

using Case = kernels::CheckCase;

// Tolerances relative to the larger of 1 and the reference's largest value (a gradient that is
// exactly zero, as with window 1, has no scale of its own): bf16 keeps 8 bits, fp16 11.
double Tolerance(at::ScalarType t) {
  return t == at::kBFloat16 ? 3e-2 : t == at::kHalf ? 5e-3 : 2e-4;
}

double RelativeError(const at::Tensor& got, const at::Tensor& want) {
  return (got.to(at::kDouble) - want).abs().max().item<double>() /
         std::max(1.0, want.abs().max().item<double>());
}

class GpuAttentionTest
    : public ::testing::TestWithParam<std::tuple<AttentionBackend, at::ScalarType, Case>> {
 protected:
  void SetUp() override {
    if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
    const auto [backend, dtype, c] = GetParam();
    if (auto why = AttentionBackendUnavailable(backend, at::Device(at::kCUDA))) {
      GTEST_SKIP() << *why;
    }
    if (backend == AttentionBackend::kFlash && dtype == at::kFloat) {
      GTEST_SKIP() << "flash takes fp16/bf16 only";
    }
  }
};

TEST_P(GpuAttentionTest, MatchesTheFp64Reference) {
  const auto [backend, dtype, c] = GetParam();
  at::manual_seed(11);
  auto cuda = at::TensorOptions().device(at::kCUDA);
  at::Tensor q = at::randn({c.B, c.H, c.T, c.D}, cuda.dtype(dtype)).requires_grad_(true);
  at::Tensor k = at::randn({c.B, c.G, c.T, c.D}, cuda.dtype(dtype)).requires_grad_(true);
  at::Tensor v = at::randn({c.B, c.G, c.T, c.D}, cuda.dtype(dtype)).requires_grad_(true);
  at::Tensor grad = at::randn({c.B, c.H, c.T, c.D}, cuda.dtype(dtype));

  at::Tensor got = Attention(q, k, v, c.window, backend);
  auto got_grads = torch::autograd::grad({got}, {q, k, v}, {grad});

  // The reference in fp64 on the same (rounded) inputs.
  const int64_t groups = c.H / c.G;
  at::Tensor q64 = q.detach().to(at::kDouble).requires_grad_(true);
  at::Tensor k64 = k.detach().to(at::kDouble).requires_grad_(true);
  at::Tensor v64 = v.detach().to(at::kDouble).requires_grad_(true);
  at::Tensor want = ReferenceAttention(q64, RepeatKv(k64, groups), RepeatKv(v64, groups), c.window);
  auto want_grads = torch::autograd::grad({want}, {q64, k64, v64}, {grad.to(at::kDouble)});

  EXPECT_FALSE(at::isnan(got).any().item<bool>());
  EXPECT_LT(RelativeError(got, want), Tolerance(dtype));
  for (int i = 0; i < 3; ++i) {
    EXPECT_FALSE(at::isnan(got_grads[i]).any().item<bool>()) << "grad " << i;
    EXPECT_LT(RelativeError(got_grads[i], want_grads[i]), 2 * Tolerance(dtype)) << "grad " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Gpu, GpuAttentionTest,
                         ::testing::Combine(::testing::Values(AttentionBackend::kCustom,
                                                              AttentionBackend::kFlash),
                                            ::testing::Values(at::kBFloat16, at::kHalf, at::kFloat),
                                            ::testing::ValuesIn(kernels::kCheckCases)),
                         [](const auto& info) {
                           const Case c = std::get<2>(info.param);
                           std::string name = AttentionBackendName(std::get<0>(info.param));
                           name += std::string("_") + c10::toString(std::get<1>(info.param)) +
                                   "_T" + std::to_string(c.T) + "_D" + std::to_string(c.D) + "_w" +
                                   std::to_string(c.window) + "_G" + std::to_string(c.G);
                           return name;
                         });

#if ONSET_WITH_SWA_KERNEL
// The raw kernel writes every output element and row statistic: buffers start as NaN.
TEST(SwaKernelTest, WritesEveryOutputOverPoisonedBuffers) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  const kernels::SwaShape s{1, 4, 2, 77, 64, 9, 0.125f};
  auto opts = at::TensorOptions().device(at::kCUDA).dtype(at::kBFloat16);
  at::Tensor q = at::randn({s.B, s.H, s.T, s.D}, opts);
  at::Tensor k = at::randn({s.B, s.G, s.T, s.D}, opts);
  at::Tensor v = at::randn({s.B, s.G, s.T, s.D}, opts);
  at::Tensor out = at::full_like(q, std::numeric_limits<float>::quiet_NaN());
  at::Tensor lse =
      at::full({s.B, s.H, s.T}, std::numeric_limits<float>::quiet_NaN(), opts.dtype(at::kFloat));
  ASSERT_EQ(
      kernels::SwaForward(s, kernels::DType::kBFloat16, q.data_ptr(), k.data_ptr(), v.data_ptr(),
                          out.data_ptr(), lse.data_ptr<float>(), at::cuda::getCurrentCUDAStream()),
      cudaSuccess);
  EXPECT_FALSE(at::isnan(out).any().item<bool>());
  EXPECT_FALSE(at::isnan(lse).any().item<bool>());
}

kernels::DType KernelDType(at::ScalarType t) {
  return t == at::kBFloat16 ? kernels::DType::kBFloat16
         : t == at::kHalf   ? kernels::DType::kFloat16
                            : kernels::DType::kFloat32;
}

// The raw kernels on every check case over NaN-poisoned buffers: the row log-sum-exp (where the
// forward's running max and sum per row end up, the state that rows of one warp update apart
// when they part ways inside a tile), the output, and dq, dk, dv, each against fp64.
class SwaKernelRawTest : public ::testing::TestWithParam<std::tuple<at::ScalarType, Case>> {
 protected:
  void SetUp() override {
    if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  }
};

TEST_P(SwaKernelRawTest, RowStatisticsOutputAndGradientsMatchFp64) {
  const auto [dtype, c] = GetParam();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  at::manual_seed(13);
  auto opts = at::TensorOptions().device(at::kCUDA).dtype(dtype);
  at::Tensor q = at::randn({c.B, c.H, c.T, c.D}, opts);
  at::Tensor k = at::randn({c.B, c.G, c.T, c.D}, opts);
  at::Tensor v = at::randn({c.B, c.G, c.T, c.D}, opts);
  at::Tensor dout = at::randn({c.B, c.H, c.T, c.D}, opts);
  const kernels::SwaShape s{c.B,
                            c.H,
                            c.G,
                            c.T,
                            c.D,
                            c.window >= c.T ? 0 : c.window,
                            static_cast<float>(1.0 / std::sqrt(static_cast<double>(c.D)))};
  const kernels::DType kd = KernelDType(dtype);
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream();

  at::Tensor out = at::full_like(q, nan);
  at::Tensor lse = at::full({c.B, c.H, c.T}, nan, opts.dtype(at::kFloat));
  ASSERT_EQ(kernels::SwaForward(s, kd, q.data_ptr(), k.data_ptr(), v.data_ptr(), out.data_ptr(),
                                lse.data_ptr<float>(), stream),
            cudaSuccess);
  at::Tensor delta = at::full_like(lse, nan);
  at::Tensor dq_accum = at::full(q.sizes(), nan, opts.dtype(at::kFloat));
  at::Tensor dq = at::full_like(q, nan), dk = at::full_like(k, nan), dv = at::full_like(v, nan);
  ASSERT_EQ(kernels::SwaBackward(s, kd, q.data_ptr(), k.data_ptr(), v.data_ptr(), out.data_ptr(),
                                 dout.data_ptr(), lse.data_ptr<float>(), delta.data_ptr<float>(),
                                 dq_accum.data_ptr<float>(), dq.data_ptr(), dk.data_ptr(),
                                 dv.data_ptr(), stream),
            cudaSuccess);

  // The reference in fp64 on the same (rounded) inputs.
  const int64_t groups = c.H / c.G;
  at::Tensor q64 = q.to(at::kDouble).requires_grad_(true);
  at::Tensor k64 = k.to(at::kDouble).requires_grad_(true);
  at::Tensor v64 = v.to(at::kDouble).requires_grad_(true);
  at::Tensor scores = at::matmul(q64, RepeatKv(k64, groups).transpose(-2, -1)) /
                      std::sqrt(static_cast<double>(c.D));  // (B, H, T, T)
  scores = scores.masked_fill(CausalBandMask(c.T, c.window, q.device()).logical_not(),
                              -std::numeric_limits<double>::infinity());
  at::Tensor want_lse = at::logsumexp(scores, -1).detach();  // (B, H, T)
  at::Tensor want = at::matmul(at::softmax(scores, -1), RepeatKv(v64, groups));
  auto want_grads = torch::autograd::grad({want}, {q64, k64, v64}, {dout.to(at::kDouble)});

  // The log-sum-exp is computed in fp32 from the rounded inputs whatever their dtype.
  EXPECT_FALSE(at::isnan(lse).any().item<bool>());
  EXPECT_LT((lse.to(at::kDouble) - want_lse).abs().max().item<double>(), 1e-3);
  EXPECT_FALSE(at::isnan(out).any().item<bool>());
  EXPECT_LT(RelativeError(out, want.detach()), Tolerance(dtype));
  const at::Tensor got_grads[] = {dq, dk, dv};
  for (int i = 0; i < 3; ++i) {
    EXPECT_FALSE(at::isnan(got_grads[i]).any().item<bool>()) << "grad " << i;
    EXPECT_LT(RelativeError(got_grads[i], want_grads[i]), 2 * Tolerance(dtype)) << "grad " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Gpu, SwaKernelRawTest,
                         ::testing::Combine(::testing::Values(at::kBFloat16, at::kHalf, at::kFloat),
                                            ::testing::ValuesIn(kernels::kCheckCases)),
                         [](const auto& info) {
                           const Case c = std::get<1>(info.param);
                           return std::string(c10::toString(std::get<0>(info.param))) + "_T" +
                                  std::to_string(c.T) + "_D" + std::to_string(c.D) + "_w" +
                                  std::to_string(c.window) + "_G" + std::to_string(c.G);
                         });
#endif

}  // namespace
}  // namespace onset::model
