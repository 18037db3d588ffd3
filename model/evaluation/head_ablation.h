// Which heads the head-masking ablation masks (docs/metrics.md, "Head-masking ablation").
// Torch-free.
//
// Every head of every layer can be masked: attention heads and the heads of the recurrent L
// and D mixers alike (Mixer::SetHeadMask). Heads are numbered flat over all layers: index
// l * H + h for head h of layer l. The evaluator scores each head on one half of the prompts
// (the selection half) and measures the masks on the other (the test half), so that the heads
// are never chosen and tested on the same prompts.
//
// The top K heads by score are masked together; as the baseline, `draws` sets of K heads are
// drawn from outside the top K, each with the same layer-type mix (as many heads of each layer
// letter), so that "masking K heads" costs the same in model capacity on both sides and only
// which heads differs. When some letter has fewer heads outside the top K than the top K holds
// (in a 2-head hybrid the top 2 are often a whole layer), the draws come from all other heads
// instead, and the plan says so (`same_mix` false): the evaluator then names the metrics
// `ablation/random_k_any_mix/...`. Draws are seeded per cell and training seed, so seeds of a
// study get different baselines and their spread is a real spread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace onset::model {

struct AblationPlan {
  std::vector<int> top;                     // the K best-scoring heads (ties: lower index)
  std::vector<std::vector<int>> baselines;  // `draws` sets of K heads, none in `top`
  bool same_mix = true;                     // whether the draws keep the top K's layer mix
  // Why the draws do not keep the mix (same_mix false), or why there are none (fewer than K
  // heads outside the top K); empty otherwise.
  std::string note;
};

// `scores[i]` and `kinds[i]` (the layer letter, F, S, L or D) of flat head i; k >= 1 (clamped
// to the head count), draws >= 1. Deterministic in `seed`.
AblationPlan PlanAblation(const std::vector<double>& scores, const std::vector<char>& kinds, int k,
                          int draws, uint64_t seed);

// The min(k, available) best-scoring heads among those whose letter is in `letters` (ties:
// lower index), sorted by index: the heads masked for one layer type.
std::vector<int> TopHeadsOf(const std::vector<double>& scores, const std::vector<char>& kinds,
                            const std::string& letters, int k);

}  // namespace onset::model
