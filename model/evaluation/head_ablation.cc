#include "model/evaluation/head_ablation.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <stdexcept>

#include "model/data/rng.h"

namespace onset::model {
namespace {

// Head indices by score, best first, ties by lower index.
std::vector<int> ByScore(const std::vector<double>& scores) {
  std::vector<int> order(scores.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return scores[a] > scores[b]; });
  return order;
}

// The first `count` entries of `heads` after a partial Fisher-Yates shuffle: a uniform draw.
std::vector<int> Draw(std::vector<int>* heads, int count, Rng* rng) {
  std::vector<int>& h = *heads;
  for (int i = 0; i < count; ++i) {
    std::swap(h[i], h[i + rng->Below(static_cast<int64_t>(h.size()) - i)]);
  }
  return std::vector<int>(h.begin(), h.begin() + count);
}

}  // namespace

AblationPlan PlanAblation(const std::vector<double>& scores, const std::vector<char>& kinds, int k,
                          int draws, uint64_t seed) {
  if (scores.size() != kinds.size()) {
    throw std::invalid_argument("ablation: scores and layer kinds differ in length");
  }
  AblationPlan plan;
  const int n = static_cast<int>(scores.size());
  k = std::min(k, n);
  if (k <= 0) return plan;
  const std::vector<int> order = ByScore(scores);
  plan.top.assign(order.begin(), order.begin() + k);
  std::sort(plan.top.begin(), plan.top.end());

  // The mix to match, and the heads of each kind outside the top K.
  std::map<char, int> need;
  for (int h : plan.top) ++need[kinds[h]];
  std::map<char, std::vector<int>> pool;
  std::vector<int> others;
  for (int h = 0; h < n; ++h) {
    if (std::binary_search(plan.top.begin(), plan.top.end(), h)) continue;
    pool[kinds[h]].push_back(h);
    others.push_back(h);
  }
  for (const auto& [kind, count] : need) {
    const int have = static_cast<int>(pool[kind].size());
    if (have < count) {
      plan.same_mix = false;
      plan.note = "the top " + std::to_string(k) + " hold " + std::to_string(count) + " " + kind +
                  "-layer heads, and only " + std::to_string(have) + " are outside them";
      break;
    }
  }
  if (!plan.same_mix && static_cast<int>(others.size()) < k) {
    plan.note += "; fewer than " + std::to_string(k) + " heads are outside the top " +
                 std::to_string(k) + ": no baseline";
    return plan;
  }
  Rng rng(seed);
  for (int d = 0; d < draws; ++d) {
    std::vector<int> draw;
    if (plan.same_mix) {
      for (auto& [kind, heads] : pool) {
        const std::vector<int> part = Draw(&heads, need.count(kind) ? need.at(kind) : 0, &rng);
        draw.insert(draw.end(), part.begin(), part.end());
      }
    } else {
      draw = Draw(&others, k, &rng);
    }
    std::sort(draw.begin(), draw.end());
    plan.baselines.push_back(std::move(draw));
  }
  return plan;
}

std::vector<int> TopHeadsOf(const std::vector<double>& scores, const std::vector<char>& kinds,
                            const std::string& letters, int k) {
  if (scores.size() != kinds.size()) {
    throw std::invalid_argument("ablation: scores and layer kinds differ in length");
  }
  std::vector<int> top;
  for (int h : ByScore(scores)) {
    if (static_cast<int>(top.size()) >= k) break;
    if (letters.find(kinds[h]) != std::string::npos) top.push_back(h);
  }
  std::sort(top.begin(), top.end());
  return top;
}

}  // namespace onset::model
