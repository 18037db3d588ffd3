// Fused CPU kernels, each with its backward, for the elementwise work between the matrix
// products of a small model, where ATen's composite forms spend a step in many passes over
// memory and many small allocations: RMSNorm (at::rms_norm is six ops forward and more backward
// on the CPU), the half-split RoPE of queries and keys (cat of four products), the short
// convolution with its SiLU (a depthwise conv1d over transposed copies) and the SwiGLU
// activation silu(gate) * up. Each function computes what its composite form computes (the
// `Composite...` functions below, which every other device and dtype takes) up to rounding: one
// pass per row, sums accumulated in float in another order. tests/model/nn/fused_cpu_ops_test.cc
// holds them to 1e-5 of the composite forms, forward and backward.
//
// The fused kernels take float32 CPU tensors; anything else (CUDA, bf16, double) runs the
// composite form. SetFusedCpuOps(false) makes the process take the composite forms everywhere
// (the benchmark's and the tests' control).
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <optional>

namespace onset::model {

// Whether float32 CPU tensors take the fused kernels (the default) or the composite forms. Set
// at start-up, before any model runs.
void SetFusedCpuOps(bool on);
bool FusedCpuOps();

// x * rsqrt(mean(x^2 over the last dim) + eps) * weight. x (..., D); weight (D), or (R, D) to
// scale the rows of x cyclically (row r of x flattened to (N, D) by weight row r % R: the
// per-head QK-norm gains of x (B, T, R, D)), or undefined for none. -> x's shape.
at::Tensor RmsNorm(const at::Tensor& x, const at::Tensor& weight, double eps);
at::Tensor CompositeRmsNorm(const at::Tensor& x, const at::Tensor& weight, double eps);

// Half-split RoPE of x (B, T, N, D): features p and p + D/2 rotate by the angle of (t, p), whose
// cos and sin are (T, D/2) float32. -> (B, T, N, D).
at::Tensor RopeBTND(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin);
at::Tensor CompositeRopeBTND(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin);

// The short causal depthwise convolution, then SiLU: channel c of position t is
// silu(sum_j weight[c, j] * x[t - K + 1 + j, c]), positions before 0 being zeros.
// x (B, T, C), weight (C, K) -> (B, T, C).
at::Tensor ShortConvSilu(const at::Tensor& x, const at::Tensor& weight);
at::Tensor CompositeShortConvSilu(const at::Tensor& x, const at::Tensor& weight);

// silu(gate) * up of gate_up (..., 2F), the gate the first F features. -> (..., F).
at::Tensor SwiGluActivation(const at::Tensor& gate_up);
at::Tensor CompositeSwiGluActivation(const at::Tensor& gate_up);

}  // namespace onset::model
