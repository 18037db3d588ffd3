#include "model/nn/attention_backend.h"

#include <atomic>

#include "model/nn/attention.h"
#include "model/nn/cpu_tiled_attention.h"
#include "model/nn/swa_flash_op.h"

namespace onset::model {
namespace {

std::atomic<AttentionBackend> g_backend{AttentionBackend::kAuto};

struct Named {
  AttentionBackend backend;
  const char* name;
};
constexpr Named kBackends[] = {
    {AttentionBackend::kAuto, "auto"},       {AttentionBackend::kCustom, "custom"},
    {AttentionBackend::kFlash, "flash"},     {AttentionBackend::kSdpaBand, "sdpa-band"},
    {AttentionBackend::kBlocked, "blocked"}, {AttentionBackend::kMath, "math"},
    {AttentionBackend::kTiled, "tiled"},
};

bool HalfPrecision(const at::Tensor& t) {
  return t.scalar_type() == at::kHalf || t.scalar_type() == at::kBFloat16;
}

// LibTorch's FlashAttention-2: (B, T, H, D) views, GQA native, window as window_size_left.
at::Tensor FlashAttention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                          int64_t window) {
  const int64_t T = q.size(2);
  const bool windowed = window > 0 && window < T;
  at::Tensor qt = q.transpose(1, 2), kt = k.transpose(1, 2),
             vt = v.transpose(1, 2);  // (B, T, *, D)
  auto result = at::_flash_attention_forward(
      qt, kt, vt, /*cum_seq_q=*/std::nullopt, /*cum_seq_k=*/std::nullopt, T, T,
      /*dropout_p=*/0.0, /*is_causal=*/true, /*return_debug_mask=*/false, /*scale=*/std::nullopt,
      /*window_size_left=*/windowed ? std::optional<int64_t>(window - 1) : std::nullopt,
      /*window_size_right=*/windowed ? std::optional<int64_t>(0) : std::nullopt);
  return std::get<0>(result).transpose(1, 2);  // (B, H, T, D)
}

}  // namespace

std::optional<AttentionBackend> ParseAttentionBackend(const std::string& name) {
  for (const Named& n : kBackends) {
    if (name == n.name) return n.backend;
  }
  return std::nullopt;
}

const char* AttentionBackendName(AttentionBackend backend) {
  for (const Named& n : kBackends) {
    if (n.backend == backend) return n.name;
  }
  return "?";
}

std::string AttentionBackendNames() {
  std::string names;
  for (const Named& n : kBackends) names += (names.empty() ? "" : ", ") + std::string(n.name);
  return names;
}

std::optional<std::string> AttentionBackendUnavailable(AttentionBackend backend,
                                                       const at::Device& device) {
  if (backend == AttentionBackend::kCustom) {
    if (!device.is_cuda()) return "the custom kernel runs on CUDA only";
    if (!SwaKernelAvailable()) return "this onset-train was built without nvcc (no kernels/)";
  }
  if (backend == AttentionBackend::kFlash && !device.is_cuda()) {
    return "LibTorch's flash attention runs on CUDA only";
  }
  if (backend == AttentionBackend::kTiled && !device.is_cpu()) {
    return "the tiled attention runs on the CPU only";
  }
  return std::nullopt;
}

void SetAttentionBackend(AttentionBackend backend) { g_backend = backend; }

AttentionBackend CurrentAttentionBackend() { return g_backend; }

at::Tensor Attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, int64_t window,
                     AttentionBackend backend) {
  const int64_t groups = q.size(1) / k.size(1);
  const int64_t T = q.size(2);
  if (backend == AttentionBackend::kAuto) {
    if (q.is_cuda() && HalfPrecision(q)) {
      backend = AttentionBackend::kFlash;
    } else if (TiledAttentionTakes(q) && TiledKeysPerTile(T, window) <= kTiledAutoMaxKeys) {
      backend = AttentionBackend::kTiled;
    } else {
      backend = AttentionBackend::kBlocked;
    }
  }
  switch (backend) {
    case AttentionBackend::kCustom:
      return SwaFlashAttention(q, k, v, window);  // (B, H, T, D)
    case AttentionBackend::kFlash:
      TORCH_CHECK(HalfPrecision(q), "attention backend flash takes fp16 or bf16, got ",
                  q.scalar_type(), " (train with bf16 autocast or pick another backend)");
      return FlashAttention(q, k, v, window);  // (B, H, T, D)
    case AttentionBackend::kSdpaBand:
      if (window <= 0 || window >= T) {
        return FullCausalAttention(q, RepeatKv(k, groups), RepeatKv(v, groups));
      }
      return BandMaskAttention(q, RepeatKv(k, groups), RepeatKv(v, groups), window);
    case AttentionBackend::kMath:
      return ReferenceAttention(q, RepeatKv(k, groups), RepeatKv(v, groups), window);
    case AttentionBackend::kTiled:
      return TiledCausalAttention(q, k, v, window);  // (B, H, T, D)
    case AttentionBackend::kBlocked:
    case AttentionBackend::kAuto:
      break;
  }
  // The CPU default: full causal SDPA, the blocked path when it saves work, else the band.
  return CausalAttention(q, RepeatKv(k, groups), RepeatKv(v, groups), window);  // (B, H, T, D)
}

}  // namespace onset::model
