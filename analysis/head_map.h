// A cell's retrieval heads (docs/metrics.md, "Retrieval heads": a head's score is how often its
// top-1 attention lands on the asked record's value, minus how often on that value when another
// key of the same prompt is asked; above 0.1 it is a retrieval head):
// the layer x head scores at one eval point, and when each head first passed the threshold.
// Pure: the cell's metric curves in.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace onset::analysis {

inline constexpr double kRetrievalHead = 0.1;

struct HeadMap {
  int64_t tokens = 0;                                      // the eval point shown
  std::vector<int64_t> eval_points;                        // every eval point with scores
  std::map<std::pair<int, int>, double> score;             // (layer, head) -> score at `tokens`
  std::map<std::pair<int, int>, int64_t> first_retrieval;  // (layer, head) -> first tokens > 0.1
};

// From a cell's metrics ("rh/score/l{L}h{H}" curves): the map at the last eval point at or
// before `at_tokens` (0: the last one). Empty eval_points when the cell has no scores.
HeadMap BuildHeadMap(const std::map<std::string, std::vector<std::pair<int64_t, double>>>& metrics,
                     int64_t at_tokens);
// {"tokens", "eval_points", "threshold", "heads": [{layer, head, score, first_retrieval_tokens}]}
std::string HeadMapJson(const HeadMap& map);

}  // namespace onset::analysis
