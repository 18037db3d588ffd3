#include "analysis/head_map.h"

#include <iterator>
#include <nlohmann/json.hpp>
#include <set>

#include "base/metric_names.h"

namespace onset::analysis {

HeadMap BuildHeadMap(const std::map<std::string, std::vector<std::pair<int64_t, double>>>& metrics,
                     int64_t at_tokens) {
  HeadMap map;
  std::set<int64_t> points;
  for (const auto& [name, curve] : metrics) {
    if (!metric::ParseHeadName(name, metric::kRhScore)) continue;
    for (const auto& [t, v] : curve) points.insert(t);
  }
  map.eval_points.assign(points.begin(), points.end());
  if (points.empty()) return map;
  map.tokens = *points.rbegin();
  if (at_tokens > 0) {
    auto it = points.upper_bound(at_tokens);
    map.tokens = it == points.begin() ? *points.begin() : *std::prev(it);
  }
  for (const auto& [name, curve] : metrics) {
    const std::optional<metric::Head> parsed = metric::ParseHeadName(name, metric::kRhScore);
    if (!parsed) continue;
    const int layer = parsed->layer;
    const int head = parsed->head;
    for (const auto& [t, v] : curve) {
      if (t == map.tokens) map.score[{layer, head}] = v;
      if (v > kRetrievalHead && !map.first_retrieval.count({layer, head})) {
        map.first_retrieval[{layer, head}] = t;
      }
    }
  }
  return map;
}

std::string HeadMapJson(const HeadMap& map) {
  nlohmann::json heads = nlohmann::json::array();
  for (const auto& [key, v] : map.score) {
    nlohmann::json s = {{"layer", key.first}, {"head", key.second}, {"score", v}};
    auto first = map.first_retrieval.find(key);
    s["first_retrieval_tokens"] = first == map.first_retrieval.end()
                                      ? nlohmann::json(nullptr)
                                      : nlohmann::json(first->second);
    heads.push_back(s);
  }
  return nlohmann::json({{"tokens", map.tokens},
                         {"eval_points", map.eval_points},
                         {"threshold", kRetrievalHead},
                         {"heads", heads}})
      .dump();
}

}  // namespace onset::analysis
