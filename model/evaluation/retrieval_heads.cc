#include "model/evaluation/retrieval_heads.h"

#include <stdexcept>

namespace onset::model {

std::vector<double> SampleMatchingScores(const RetrievalSample& s) {
  const size_t m = static_cast<size_t>(s.value_len);
  if (s.value_len <= 0 || s.asked.size() != m || s.swapped.size() != m) {
    throw std::invalid_argument("retrieval sample: each trace must have value_len steps");
  }
  const size_t heads = s.asked[0].size();
  auto in = [&](int64_t p, int begin) { return p >= begin && p < begin + s.value_len ? 1.0 : 0.0; };
  std::vector<double> score(heads, 0.0);
  for (size_t step = 0; step < m; ++step) {
    const std::vector<int64_t>& a = s.asked[step];
    const std::vector<int64_t>& w = s.swapped[step];
    if (a.size() != heads || w.size() != heads) {
      throw std::invalid_argument("retrieval sample: ragged trace");
    }
    for (size_t h = 0; h < heads; ++h) {
      const double needle = in(a[h], s.needle_value) - in(w[h], s.needle_value);
      const double swap = in(w[h], s.swap_value) - in(a[h], s.swap_value);
      score[h] += 0.5 * (needle + swap) / s.value_len;
    }
  }
  return score;
}

bool RetrievalHeadScorer::Add(const RetrievalSample& sample) {
  const size_t heads = sample.asked.empty() ? sum_.size() : sample.asked[0].size();
  if (heads != sum_.size()) {
    throw std::invalid_argument("retrieval sample: head count differs from the scorer's");
  }
  if (sample.prompt_len > max_prompt_len_) return false;
  const std::vector<double> score = SampleMatchingScores(sample);
  for (size_t h = 0; h < score.size(); ++h) sum_[h] += score[h];
  ++counted_;
  return true;
}

std::vector<double> RetrievalHeadScorer::Scores() const {
  if (counted_ == 0 || counted_ < min_samples_) return {};
  std::vector<double> out(sum_.size());
  for (size_t h = 0; h < out.size(); ++h) out[h] = sum_[h] / counted_;
  return out;
}

}  // namespace onset::model
