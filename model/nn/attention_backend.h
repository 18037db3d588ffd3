// Which implementation computes causal (and sliding-window) attention, chosen per run so that
// backends can be compared on the same cells (`onset-train --attention-backend NAME`). Every
// backend computes the same function (attention.h's masking rule); they differ in speed, memory
// and the devices and dtypes they take.
//
//   auto       the default: on CUDA LibTorch's flash kernels (fp16/bf16) or SDPA otherwise; on
//              the CPU `tiled` for float32 when a tile sees at most 1024 keys (any window up
//              to 961, or T <= 1024), else the blocked O(T*W) path when it saves work and SDPA
//              otherwise
//   custom     kernels/swa_attention.cu (CUDA, when built with nvcc): O(T*W) work
//   flash      LibTorch's FlashAttention-2 with window_size_left (CUDA, fp16/bf16)
//   sdpa-band  scaled_dot_product_attention with a (T, T) band mask: O(T^2)
//   blocked    chunks of W queries against 2W keys through SDPA: O(T*W)
//   math       explicit scores, mask and softmax (ReferenceAttention): O(T^2) memory
//   tiled      cpu_tiled_attention.h: query tiles against their visible keys through BLAS,
//              O(T*W) work, the log-sum-exp kept for the backward (CPU, float32)
//
// auto stays on LibTorch's flash kernels on CUDA until the custom kernel is measured faster on
// the GPU (bench/gpu/run.sh); no GPU figure exists yet.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <optional>
#include <string>

namespace onset::model {

enum class AttentionBackend { kAuto, kCustom, kFlash, kSdpaBand, kBlocked, kMath, kTiled };

std::optional<AttentionBackend> ParseAttentionBackend(const std::string& name);
const char* AttentionBackendName(AttentionBackend backend);
// "auto, custom, flash, sdpa-band, blocked, math, tiled".
std::string AttentionBackendNames();

// Whether `backend` can run on `device` in this build; the reason when it cannot.
std::optional<std::string> AttentionBackendUnavailable(AttentionBackend backend,
                                                       const at::Device& device);

// The backend of this process. Set once at start-up, before any model runs (not thread-safe
// against concurrent attention calls); kAuto until then.
void SetAttentionBackend(AttentionBackend backend);
AttentionBackend CurrentAttentionBackend();

// Causal attention with `window` (<= 0: full) through `backend`. q (B, H, T, D); k, v
// (B, G, T, D) with H a multiple of G (grouped-query attention). Returns (B, H, T, D).
at::Tensor Attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, int64_t window,
                     AttentionBackend backend);
inline at::Tensor Attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                            int64_t window) {
  return Attention(q, k, v, window, CurrentAttentionBackend());
}

}  // namespace onset::model
