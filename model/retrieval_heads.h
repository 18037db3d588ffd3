// Retrieval-head scores (Wu et al. 2024, "Retrieval Head Mechanistically Explains Long-Context
// Factuality"; SCIENCE.md, "Measurements"). Torch-free: the evaluator hands over the top-1
// attended positions that cached decoding traced (decoding.h).
//
// While the model decodes the needle's value, at generated step s each head's most-attended
// position p counts if p lies in the needle's value span and the token at p equals the token
// just generated; each such step adds 1 / value_len. A head's score is the mean over samples.
// Heads are numbered flat over the attention layers: index a * H + h for the a-th F/S layer.
#pragma once

#include <cstdint>
#include <vector>

#include "model/vocab.h"

namespace onset::model {

// One decoded NIAH sample as the scorer sees it.
struct RetrievalSample {
  std::vector<Token> sequence;  // the prompt followed by the generated tokens
  int prompt_len = 0;           // generated token s is sequence[prompt_len + s]
  int value_begin = 0;          // the needle's value span: value_begin .. + value_len - 1
  int value_len = 0;
  std::vector<std::vector<int64_t>> top1;  // [step][head]: absolute position, steps <= value_len
};

// Per-head score of one sample, in [0, 1].
std::vector<double> SampleRetrievalScores(const RetrievalSample& sample);

// Whether at least half of the value tokens were decoded right (position by position): the
// original protocol's filter.
bool MostlyRight(const RetrievalSample& sample);

// Accumulates samples; not thread-safe.
class RetrievalHeadScorer {
 public:
  explicit RetrievalHeadScorer(int heads) : sum_all_(heads, 0.0), sum_right_(heads, 0.0) {}
  void Add(const RetrievalSample& sample);

  // Mean over every sample (what the evaluator reports as rh/...: defined at every eval point,
  // so emergence can be timed) and over the mostly-right samples only (the original protocol;
  // empty when no sample was mostly right). All zeros before any sample.
  std::vector<double> Scores() const;
  std::vector<double> MostlyRightScores() const;
  int samples() const { return samples_; }
  int mostly_right_samples() const { return right_; }

 private:
  std::vector<double> sum_all_, sum_right_;
  int samples_ = 0, right_ = 0;
};

}  // namespace onset::model
