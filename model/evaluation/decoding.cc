#include "model/evaluation/decoding.h"

#include "model/config/cell_config.h"

namespace onset::model {

at::Tensor GreedyDecode(Transformer& model, const at::Tensor& prompts, int steps,
                        at::Tensor* logits) {
  at::Tensor seq = prompts;  // (B, L)
  std::vector<at::Tensor> out, chosen;
  for (int s = 0; s < steps; ++s) {
    at::Tensor last = model(seq).select(1, -1);  // (B, V) from (B, L + s, V)
    at::Tensor next = last.argmax(-1, true);     // (B, 1)
    out.push_back(next);
    if (logits) chosen.push_back(last);
    seq = at::cat({seq, next}, 1);  // (B, L + s + 1)
  }
  if (logits) *logits = at::stack(chosen, 1);  // (B, S, V)
  return at::cat(out, 1);                      // (B, S)
}

at::Tensor CachedGreedyDecode(Transformer& model, const at::Tensor& prompts, int steps,
                              at::Tensor* logits, AttentionTrace* trace) {
  const int64_t L = prompts.size(1);
  TORCH_CHECK(L >= 2, "CachedGreedyDecode needs a prompt of at least 2 tokens, got ", L);
  const ModelConfig& config = model->config();
  std::vector<LayerCache> caches(config.layers);
  std::vector<int> attention_layers;
  for (int i = 0; i < config.layers; ++i) {
    const char kind = config.pattern[i];
    if (kind == kFullAttention || kind == kSlidingWindow) attention_layers.push_back(i);
  }
  if (trace) {
    for (int i : attention_layers) caches[i].record_attention = true;
  }
  model->Prefill(prompts.narrow(1, 0, L - 1), &caches);  // logits (B, L - 1, V) unused

  at::Tensor token = prompts.narrow(1, L - 1, 1);  // (B, 1)
  std::vector<at::Tensor> out, chosen, top1;
  for (int s = 0; s < steps; ++s) {
    at::Tensor last = model->Step(token, L - 1 + s, &caches).select(1, 0);  // (B, V)
    token = last.argmax(-1, true);                                          // (B, 1)
    out.push_back(token);
    if (logits) chosen.push_back(last);
    if (trace) {
      std::vector<at::Tensor> per_layer;
      for (int i : attention_layers) {
        const LayerCache& c = caches[i];
        per_layer.push_back(c.probs.argmax(-1) + c.first_position);  // (B, H)
      }
      top1.push_back(at::stack(per_layer, 1));  // (B, A, H)
    }
  }
  if (trace) {
    trace->layers = attention_layers;
    trace->top1 = attention_layers.empty() || steps == 0
                      ? at::empty({prompts.size(0), steps, 0, config.heads}, at::kLong)
                      : at::stack(top1, 1).to(at::kCPU);  // (B, S, A, H)
  }
  if (logits) *logits = at::stack(chosen, 1);  // (B, S, V)
  return at::cat(out, 1);                      // (B, S)
}

}  // namespace onset::model
