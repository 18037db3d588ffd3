// Retrieval-head scores (Wu et al. 2024, "Retrieval Head Mechanistically Explains Long-Context
// Factuality"; docs/metrics.md, "Retrieval heads"). Torch-free: the evaluator hands over the
// top-1 attended positions that cached decoding traced (decoding.h).
//
// While the model decodes the needle's value, at generated step s each head's most-attended
// position p counts if p lies in the needle's value span and the token at p equals the token
// just generated; each such step adds 1 / value_len. A head's score is the mean of that over
// the samples the model answered exactly right at prompt lengths within the training length
// (Wu et al. keep only right answers). Over every sample the mean would be roughly accuracy x
// specialisation: a perfect copying head would score 0.3 at 30% accuracy, so the score could
// never rise before the accuracy does. Over right answers it is 1.0 there.
//
// Heads are numbered flat over the attention layers: index a * H + h for the a-th F/S layer.
#pragma once

#include <cstdint>
#include <vector>

#include "model/config/vocab.h"

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

// Whether every value token was generated exactly (the needle's value is in the prompt).
bool AnsweredRight(const RetrievalSample& sample);

// Accumulates the samples that count; not thread-safe.
class RetrievalHeadScorer {
 public:
  // `max_prompt_len`: samples with a longer prompt (beyond the training length) do not count.
  RetrievalHeadScorer(int heads, int max_prompt_len)
      : sum_(heads, 0.0), max_prompt_len_(max_prompt_len) {}
  // Counts `sample` when it was answered right within the length; returns whether it did.
  // Throws std::invalid_argument when its head count differs from the scorer's.
  bool Add(const RetrievalSample& sample);

  // Mean over the counted samples; empty when none counted (no score, rather than 0).
  std::vector<double> Scores() const;
  int samples() const { return counted_; }  // counted samples (rh/samples)
  int seen() const { return seen_; }        // samples offered

 private:
  std::vector<double> sum_;
  int max_prompt_len_;
  int counted_ = 0, seen_ = 0;
};

}  // namespace onset::model
