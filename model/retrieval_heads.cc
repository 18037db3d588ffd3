#include "model/retrieval_heads.h"

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

bool MostlyRight(const RetrievalSample& s) {
  int right = 0;
  for (int i = 0; i < s.value_len; ++i) {
    const size_t at = static_cast<size_t>(s.prompt_len + i);
    right += at < s.sequence.size() && s.sequence[at] == s.sequence[s.value_begin + i];
  }
  return 2 * right >= s.value_len;
}

void RetrievalHeadScorer::Add(const RetrievalSample& sample) {
  std::vector<double> score = SampleRetrievalScores(sample);
  if (score.size() != sum_all_.size()) {
    throw std::invalid_argument("retrieval sample: head count differs from the scorer's");
  }
  const bool right = MostlyRight(sample);
  for (size_t h = 0; h < score.size(); ++h) {
    sum_all_[h] += score[h];
    if (right) sum_right_[h] += score[h];
  }
  ++samples_;
  right_ += right;
}

std::vector<double> RetrievalHeadScorer::Scores() const {
  std::vector<double> out(sum_all_.size(), 0.0);
  for (size_t h = 0; h < out.size() && samples_ > 0; ++h) out[h] = sum_all_[h] / samples_;
  return out;
}

std::vector<double> RetrievalHeadScorer::MostlyRightScores() const {
  if (right_ == 0) return {};
  std::vector<double> out(sum_right_.size());
  for (size_t h = 0; h < out.size(); ++h) out[h] = sum_right_[h] / right_;
  return out;
}

}  // namespace onset::model
