#include "model/nn/swa_flash_op.h"

#include <cmath>

#if ONSET_WITH_SWA_KERNEL
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/autograd.h>

#include "kernels/swa_attention.h"
#endif

namespace onset::model {

#if ONSET_WITH_SWA_KERNEL
namespace {

kernels::DType KernelDType(const at::Tensor& t) {
  switch (t.scalar_type()) {
    case at::kFloat:
      return kernels::DType::kFloat32;
    case at::kHalf:
      return kernels::DType::kFloat16;
    case at::kBFloat16:
      return kernels::DType::kBFloat16;
    default:
      TORCH_CHECK(false, "custom attention kernel: dtype ", t.scalar_type(),
                  " is not supported (float32, float16, bfloat16)");
  }
}

kernels::SwaShape Shape(const at::Tensor& q, const at::Tensor& k, int64_t window) {
  kernels::SwaShape s;
  s.B = q.size(0);
  s.H = q.size(1);
  s.G = k.size(1);
  s.T = q.size(2);
  s.D = q.size(3);
  s.window = window >= s.T ? 0 : window;
  s.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(s.D)));
  return s;
}

void Check(cudaError_t err, const char* what) {
  TORCH_CHECK(err == cudaSuccess, "custom attention kernel: ", what, ": ", cudaGetErrorString(err));
}

class SwaFlashFunction : public torch::autograd::Function<SwaFlashFunction> {
 public:
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& q_in,
                            const at::Tensor& k_in, const at::Tensor& v_in, int64_t window) {
    const at::Tensor q = q_in.contiguous(), k = k_in.contiguous(), v = v_in.contiguous();
    const kernels::SwaShape s = Shape(q, k, window);
    at::Tensor out = at::empty_like(q);                                          // (B, H, T, D)
    at::Tensor lse = at::empty({s.B, s.H, s.T}, q.options().dtype(at::kFloat));  // (B, H, T)
    const c10::cuda::CUDAGuard guard(q.device());
    Check(kernels::SwaForward(s, KernelDType(q), q.data_ptr(), k.data_ptr(), v.data_ptr(),
                              out.data_ptr(), lse.data_ptr<float>(),
                              at::cuda::getCurrentCUDAStream()),
          "forward");
    ctx->save_for_backward({q, k, v, out, lse});
    ctx->saved_data["window"] = window;
    return out;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor &q = saved[0], &k = saved[1], &v = saved[2], &out = saved[3], &lse = saved[4];
    const at::Tensor dout = grads[0].contiguous();
    const kernels::SwaShape s = Shape(q, k, ctx->saved_data["window"].toInt());
    at::Tensor delta = at::empty_like(lse);                                     // (B, H, T)
    at::Tensor dq_accum = at::empty(q.sizes(), q.options().dtype(at::kFloat));  // (B, H, T, D)
    at::Tensor dq = at::empty_like(q), dk = at::empty_like(k), dv = at::empty_like(v);
    const c10::cuda::CUDAGuard guard(q.device());
    Check(kernels::SwaBackward(s, KernelDType(q), q.data_ptr(), k.data_ptr(), v.data_ptr(),
                               out.data_ptr(), dout.data_ptr(), lse.data_ptr<float>(),
                               delta.data_ptr<float>(), dq_accum.data_ptr<float>(), dq.data_ptr(),
                               dk.data_ptr(), dv.data_ptr(), at::cuda::getCurrentCUDAStream()),
          "backward");
    return {dq, dk, dv, at::Tensor()};
  }
};

}  // namespace

bool SwaKernelAvailable() { return true; }

at::Tensor SwaFlashAttention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                             int64_t window) {
  TORCH_CHECK(q.is_cuda() && k.is_cuda() && v.is_cuda(),
              "custom attention kernel: tensors must be on CUDA");
  TORCH_CHECK(q.dim() == 4 && k.dim() == 4 && v.sizes() == k.sizes(),
              "custom attention kernel: q (B, H, T, D), k and v (B, G, T, D) expected");
  TORCH_CHECK(q.size(3) == 64 || q.size(3) == 128,
              "custom attention kernel: head dim must be 64 or 128, got ", q.size(3));
  TORCH_CHECK(q.size(1) % k.size(1) == 0, "custom attention kernel: ", q.size(1),
              " query heads are not a multiple of ", k.size(1), " key/value heads");
  TORCH_CHECK(q.scalar_type() == k.scalar_type() && k.scalar_type() == v.scalar_type(),
              "custom attention kernel: q, k and v must share a dtype");
  return SwaFlashFunction::apply(q, k, v, window);
}

#else

bool SwaKernelAvailable() { return false; }

at::Tensor SwaFlashAttention(const at::Tensor&, const at::Tensor&, const at::Tensor&, int64_t) {
  TORCH_CHECK(false,
              "custom attention kernel: this build has no CUDA kernels (nvcc not found "
              "or ONSET_WITH_CUDA=OFF)");
}

#endif

}  // namespace onset::model
