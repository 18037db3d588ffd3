// kernels/swa_attention.cu as a LibTorch autograd function: the `custom` attention backend.
// Built with the kernels when nvcc was found; otherwise SwaKernelAvailable() is false and
// SwaFlashAttention throws.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>

namespace onset::model {

bool SwaKernelAvailable();

// q (B, H, T, D); k, v (B, G, T, D); CUDA; fp32, fp16 or bf16; D 64 or 128. Returns (B, H, T, D)
// and is differentiable in q, k and v. Throws (c10::Error) naming what is unsupported.
at::Tensor SwaFlashAttention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                             int64_t window);

}  // namespace onset::model
