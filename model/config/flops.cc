#include "model/config/flops.h"

#include <algorithm>

namespace onset::model {
namespace {

// Mean over query positions i = 0..T-1 of min(i + 1, w): keys a causal window-w query reads.
double MeanWindowKeys(int64_t T, int64_t w) {
  if (w <= 0 || w >= T) return (T + 1) / 2.0;
  // i < w: i + 1 keys (sum w(w+1)/2); the remaining T - w queries read w each.
  return (w * (w + 1) / 2.0 + static_cast<double>(T - w) * w) / static_cast<double>(T);
}

}  // namespace

int64_t NonEmbeddingParams(const ModelConfig& model) {
  const int64_t C = model.d_model, H = model.heads, G = model.resolved_kv_heads();
  const int64_t D = model.head_dim(), F = model.resolved_mlp_hidden();
  int64_t n = C;  // the final norm
  for (size_t i = 0; i < model.pattern.size(); ++i) {
    const char kind = model.pattern[i];
    n += 2 * C + 3 * C * F;  // norms and the SwiGLU MLP
    if (model.LayerUsesShortConv(static_cast<int>(i))) {
      // One K-tap kernel per convolved channel: q, k, v.
      const int64_t channels =
          kind == kFullAttention || kind == kSlidingWindow ? (H + 2 * G) * D : 3 * C;
      n += channels * model.short_conv_kernel;
    }
    switch (kind) {
      case kFullAttention:
      case kSlidingWindow:
        n += C * (H + 2 * G) * D + C * C + (model.qk_norm ? 2 * D : 0);
        break;
      case kLinearAttention:
        n += C * (4 * C + H) + C * C + D;
        break;
      case kGatedDeltaNet:
        n += C * (4 * C + 2 * H) + C * C + 2 * H + D;
        break;
      default:
        break;
    }
  }
  return n;
}

double TrainFlopsPerToken(const ModelConfig& model, int64_t non_embedding_params) {
  const double d = model.d_model;
  double flops = 6.0 * (static_cast<double>(non_embedding_params) + d * model.vocab_size);
  for (char kind : model.pattern) {
    double keys = 0;
    switch (kind) {
      case kFullAttention:
        keys = MeanWindowKeys(model.seq_len, 0);
        break;
      case kSlidingWindow:
        keys = MeanWindowKeys(model.seq_len, model.window);
        break;
      default:  // L, D: causal inside a chunk plus the state
        keys = (std::min(model.chunk_size, model.seq_len) + 1) / 2.0 + 2.0 * model.head_dim();
        break;
    }
    flops += 12.0 * d * keys;
  }
  return flops;
}

std::optional<double> PeakBf16Flops(const std::string& name) {
  auto has = [&](const char* s) { return name.find(s) != std::string::npos; };
  if (has("H200")) return 989.4e12;
  if (has("H100")) return has("PCIe") ? 756e12 : 989.4e12;
  if (has("B200")) return 2.25e15;
  if (has("A100")) return 312e12;
  if (has("L40S")) return 362e12;
  return std::nullopt;
}

}  // namespace onset::model
