#include "model/evaluation/head_ablation.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <stdexcept>

#include "model/data/rng.h"

namespace onset::model {

AblationPlan PlanAblation(const std::vector<double>& scores, const std::vector<char>& kinds, int k,
                          int draws, uint64_t seed) {
  if (scores.size() != kinds.size()) {
    throw std::invalid_argument("ablation: scores and layer kinds differ in length");
  }
  AblationPlan plan;
  const int n = static_cast<int>(scores.size());
  k = std::min(k, n);
  if (k <= 0) return plan;
  std::vector<int> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return scores[a] > scores[b]; });
  plan.top.assign(order.begin(), order.begin() + k);
  std::sort(plan.top.begin(), plan.top.end());

  // The mix to match, and the heads of each kind outside the top K.
  std::map<char, int> need;
  for (int h : plan.top) ++need[kinds[h]];
  std::map<char, std::vector<int>> pool;
  for (int h = 0; h < n; ++h) {
    if (!std::binary_search(plan.top.begin(), plan.top.end(), h)) pool[kinds[h]].push_back(h);
  }
  for (const auto& [kind, count] : need) {
    const int have = static_cast<int>(pool[kind].size());
    if (have < count) {
      plan.no_baseline = "the top " + std::to_string(k) + " hold " + std::to_string(count) + " " +
                         kind + "-layer heads, and only " + std::to_string(have) +
                         " are outside them";
      return plan;
    }
  }
  Rng rng(seed);
  for (int d = 0; d < draws; ++d) {
    std::vector<int> draw;
    for (auto& [kind, heads] : pool) {
      const int count = need.count(kind) ? need.at(kind) : 0;
      // A partial Fisher-Yates shuffle: the first `count` entries are a uniform draw.
      for (int i = 0; i < count; ++i) {
        std::swap(heads[i], heads[i + rng.Below(static_cast<int64_t>(heads.size()) - i)]);
      }
      draw.insert(draw.end(), heads.begin(), heads.begin() + count);
    }
    std::sort(draw.begin(), draw.end());
    plan.baselines.push_back(std::move(draw));
  }
  return plan;
}

}  // namespace onset::model
