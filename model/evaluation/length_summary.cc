#include "model/evaluation/length_summary.h"

namespace onset::model {

LengthSummary SummariseLengths(const std::map<int, double>& per_length, int seq_len) {
  double sums[2] = {0, 0};
  int counts[2] = {0, 0};
  for (const auto& [length, value] : per_length) {
    const int side = length <= seq_len ? 0 : 1;
    sums[side] += value;
    ++counts[side];
  }
  LengthSummary s;
  if (counts[0] > 0) s.within = sums[0] / counts[0];
  if (counts[1] > 0) s.beyond = sums[1] / counts[1];
  return s;
}

}  // namespace onset::model
