// Retrieval-head scores that need key matching (docs/metrics.md, "Retrieval heads"; after Wu
// et al. 2024, "Retrieval Head Mechanistically Explains Long-Context Factuality"). Torch-free:
// the evaluator hands over the top-1 attended positions that cached decoding traced
// (decoding.h).
//
// Every headline (multi-key) prompt within the training length is decoded twice: as asked, and
// as the key-swap control asks it (niah_tasks.h, KeySwapPrompt), the same haystack asking the
// key of another of its records, the swap record. At each generated step s, each head's
// most-attended position p is checked against two value spans, the needle's (the record the
// prompt asks) and the swap record's:
//
//   N(s) = 1 when p lies in the needle's value span,   W(s) = the same for the swap record's,
//
// read off the prompt as asked (N_ask, W_ask) and as swapped (N_swap, W_swap). The sample's
// score is the mean over the m = value_len steps of
//
//   ((N_ask - N_swap) + (W_swap - W_ask)) / 2:
//
// the rate at which the head's top attention is on the asked record's value, minus the rate
// at which it is on that same value when another record is asked. A head that attends to the
// value of whichever record is asked (a matcher) scores 1; one whose attention does not depend
// on the asked key (a copier, however it picks its value: first, last, nearest) scores exactly
// 0, and one that looks elsewhere 0. A head's score is the mean over every sample, answered
// right or not. Scoring only right answers, as Wu et al. do, counts a copier that happens to
// hit the needle as a perfect head; contrasting the needle with a distractor of the same
// prompt leaves a position-biased copier above 0 (a needle placed early is often the first
// value); the paired prompts leave it nothing.
//
// Below `min_samples` counted samples (eval.rh_min_samples) no score is reported: a mean over a
// handful of prompts is noise.
//
// Heads are numbered flat over the attention layers: index a * H + h for the a-th F/S layer.
#pragma once

#include <cstdint>
#include <vector>

namespace onset::model {

// One headline sample as the scorer sees it: where the two records' values are and where each
// head looked at each generated step, as asked and swapped.
struct RetrievalSample {
  int prompt_len = 0;
  int value_len = 0;                          // m, the tokens of each value (and steps)
  int needle_value = 0;                       // first position of the asked record's value
  int swap_value = 0;                         // first position of the swap record's value
  std::vector<std::vector<int64_t>> asked;    // [step][head]: top-1 position, prompt as asked
  std::vector<std::vector<int64_t>> swapped;  // [step][head]: the same, key swapped
};

// Per-head score of one sample, in [-1, 1]. Throws std::invalid_argument when either trace
// has other than value_len steps or the heads differ between steps.
std::vector<double> SampleMatchingScores(const RetrievalSample& sample);

// Accumulates samples; not thread-safe.
class RetrievalHeadScorer {
 public:
  // `max_prompt_len`: samples with a longer prompt (beyond the training length) do not count.
  // `min_samples` >= 1: fewer counted samples give no scores.
  RetrievalHeadScorer(int heads, int max_prompt_len, int min_samples)
      : sum_(heads, 0.0), max_prompt_len_(max_prompt_len), min_samples_(min_samples) {}
  // Counts `sample` when its prompt lies within the length; returns whether it did. Throws
  // std::invalid_argument when its head count differs from the scorer's.
  bool Add(const RetrievalSample& sample);

  // Mean over the counted samples; empty below min_samples (no score, rather than a noisy one).
  std::vector<double> Scores() const;
  int samples() const { return counted_; }  // counted samples (rh/samples)
  int min_samples() const { return min_samples_; }

 private:
  std::vector<double> sum_;
  int max_prompt_len_, min_samples_;
  int counted_ = 0;
};

}  // namespace onset::model
