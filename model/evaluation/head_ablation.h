// Which heads the head-masking ablation masks (docs/metrics.md, "Head-masking ablation").
// Torch-free.
//
// The top K heads by retrieval score are masked together; as the baseline, `draws` sets of K
// heads are drawn from outside the top K, each with the same layer-type mix as the top K (as
// many F-layer and S-layer heads), so that "masking K heads" costs the same in model capacity
// on both sides and only which heads differs. Retrieval carried by the top heads shows as a
// collapse for them and not for the baseline draws. Draws are seeded per cell and training
// seed, so seeds of a study get different baselines and their spread is a real spread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace onset::model {

struct AblationPlan {
  std::vector<int> top;                     // the K best-scoring heads (ties: lower index)
  std::vector<std::vector<int>> baselines;  // `draws` sets of K heads, none in `top`
  // Why there is no baseline when `baselines` is empty (a layer type has fewer heads outside
  // the top K than the top K holds); empty otherwise.
  std::string no_baseline;
};

// `scores[i]` and `kinds[i]` (the layer letter, 'F' or 'S') of flat head i; k >= 1 (clamped to
// the head count), draws >= 1. Deterministic in `seed`.
AblationPlan PlanAblation(const std::vector<double>& scores, const std::vector<char>& kinds, int k,
                          int draws, uint64_t seed);

}  // namespace onset::model
