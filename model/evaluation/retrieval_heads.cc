#include "model/evaluation/retrieval_heads.h"

#include <stdexcept>

namespace onset::model {

std::vector<double> SampleRetrievalScores(const RetrievalSample& s) {
  const size_t heads = s.top1.empty() ? 0 : s.top1[0].size();
  std::vector<double> score(heads, 0.0);
  if (s.value_len <= 0) return score;
  const int64_t n = static_cast<int64_t>(s.sequence.size());
  for (size_t step = 0; step < s.top1.size(); ++step) {
    const int64_t at = s.prompt_len + static_cast<int64_t>(step);
    if (at >= n) throw std::invalid_argument("retrieval sample: more steps than generated tokens");
    const Token generated = s.sequence[at];
    for (size_t h = 0; h < heads; ++h) {
      const int64_t p = s.top1[step][h];
      const bool in_value = p >= s.value_begin && p < s.value_begin + s.value_len;
      if (in_value && p < n && s.sequence[p] == generated) score[h] += 1.0 / s.value_len;
    }
  }
  return score;
}

bool AnsweredRight(const RetrievalSample& s) {
  if (s.value_len <= 0) return false;
  for (int i = 0; i < s.value_len; ++i) {
    const size_t at = static_cast<size_t>(s.prompt_len + i);
    if (at >= s.sequence.size() || s.sequence[at] != s.sequence[s.value_begin + i]) return false;
  }
  return true;
}

bool RetrievalHeadScorer::Add(const RetrievalSample& sample) {
  const size_t heads = sample.top1.empty() ? sum_.size() : sample.top1[0].size();
  if (heads != sum_.size()) {
    throw std::invalid_argument("retrieval sample: head count differs from the scorer's");
  }
  ++seen_;
  if (sample.prompt_len > max_prompt_len_ || !AnsweredRight(sample)) return false;
  const std::vector<double> score = SampleRetrievalScores(sample);
  for (size_t h = 0; h < score.size(); ++h) sum_[h] += score[h];
  ++counted_;
  return true;
}

std::vector<double> RetrievalHeadScorer::Scores() const {
  if (counted_ == 0) return {};
  std::vector<double> out(sum_.size());
  for (size_t h = 0; h < out.size(); ++h) out[h] = sum_[h] / counted_;
  return out;
}

}  // namespace onset::model
