// Sliding-window causal flash attention on CUDA, forward and backward, for the S (and F) layers.
//
// Layout: q (B, H, T, D), k and v (B, G, T, D) with H a multiple of G (grouped-query attention:
// query head h reads key/value head h / (H / G)); every tensor contiguous. Inputs are bf16,
// fp16 or fp32; scores, softmax and accumulation are fp32. D is 64 or 128. Any T >= 1; window
// <= 0 (or >= T) is full causal attention. Work is O(T * window) (swa_tiles.h); the forward
// keeps only the per-row log-sum-exp (B, H, T) for the backward, never the (T, T) scores.
//
// No LibTorch here: raw device pointers, launched on the given stream. model/nn/swa_flash_op.cc
// wraps it as an autograd function (the `custom` attention backend). Its reference is
// ReferenceAttention (model/nn/attention.h) in fp64; its tests are tests/kernels/ (the tile plan on
// any machine, the numbers on a GPU, label gpu) and `onset-attention-bench --check`; its
// benchmark is bench/attention_bench.cc, run with the others by bench/gpu/run.sh.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace onset::kernels {

enum class DType { kFloat32, kFloat16, kBFloat16 };

struct SwaShape {
  int64_t B = 0, H = 0, G = 0, T = 0, D = 0;
  int64_t window = 0;  // <= 0: full causal
  float scale = 0;     // usually 1 / sqrt(D)
};

// out (B, H, T, D) in the input dtype; lse (B, H, T) fp32, natural log of each row's sum of
// exp(scale * q.k). Returns cudaErrorInvalidValue for an unsupported D.
cudaError_t SwaForward(const SwaShape& shape, DType dtype, const void* q, const void* k,
                       const void* v, void* out, float* lse, cudaStream_t stream);

// Gradients given dout (B, H, T, D) and the forward's out and lse. dq_accum is fp32 scratch of
// q's size; dq, dk, dv are written in the input dtype (dk, dv summed over each group's heads).
cudaError_t SwaBackward(const SwaShape& shape, DType dtype, const void* q, const void* k,
                        const void* v, const void* out, const void* dout, const float* lse,
                        float* delta, float* dq_accum, void* dq, void* dk, void* dv,
                        cudaStream_t stream);

}  // namespace onset::kernels
