// The matching score against heads whose answer is known: synthetic heads that match the asked
// key, copy some value whichever key is asked (the first, the last, or one at random), or look
// at the background, on the headline prompts and their key swaps as the evaluator builds them.
#include "model/evaluation/retrieval_heads.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "model/evaluation/niah_tasks.h"

namespace onset::model {
namespace {

// 2-token values: the needle's at 10, the swap record's at 3; 2 steps. Head 0 follows the
// asked key, head 1 stays on the needle whichever key is asked, head 2 on the background.
RetrievalSample Handmade() {
  RetrievalSample s;
  s.prompt_len = 20;
  s.value_len = 2;
  s.needle_value = 10;
  s.swap_value = 3;
  s.asked = {{10, 10, 0}, {11, 11, 7}};
  s.swapped = {{3, 10, 0}, {4, 11, 7}};
  return s;
}

TEST(RetrievalHeadsTest, AttentionThatFollowsTheAskedKeyCountsAttentionThatStaysDoesNot) {
  const std::vector<double> score = SampleMatchingScores(Handmade());
  ASSERT_EQ(score.size(), 3u);
  EXPECT_DOUBLE_EQ(score[0], 1.0);  // moves to whichever value is asked
  EXPECT_DOUBLE_EQ(score[1], 0.0);  // on the needle both times: a copier
  EXPECT_DOUBLE_EQ(score[2], 0.0);  // elsewhere
  RetrievalSample half = Handmade();
  half.swapped[1] = {11, 11, 7};  // follows the key on the first step only
  EXPECT_DOUBLE_EQ(SampleMatchingScores(half)[0], 0.5);
  RetrievalSample anti = Handmade();
  std::swap(anti.asked, anti.swapped);  // looks at the record that is NOT asked
  EXPECT_DOUBLE_EQ(SampleMatchingScores(anti)[0], -1.0);
  RetrievalSample ragged = Handmade();
  ragged.swapped.pop_back();
  EXPECT_THROW(SampleMatchingScores(ragged), std::invalid_argument);
}

TEST(RetrievalHeadsTest, NoScoreBelowTheMinimumOrBeyondTheTrainingLength) {
  RetrievalHeadScorer scorer(3, /*max_prompt_len=*/20, /*min_samples=*/3);
  RetrievalSample s = Handmade();
  EXPECT_TRUE(scorer.Add(s));
  EXPECT_TRUE(scorer.Add(s));
  EXPECT_TRUE(scorer.Scores().empty());  // 2 < 3 samples: no score, not a noisy one
  RetrievalSample longer = s;
  longer.prompt_len = 21;
  EXPECT_FALSE(scorer.Add(longer));  // beyond the training length: not counted
  EXPECT_EQ(scorer.samples(), 2);
  EXPECT_TRUE(scorer.Add(s));
  EXPECT_EQ(scorer.Scores(), (std::vector<double>{1.0, 0.0, 0.0}));
  RetrievalSample other_heads = s;
  for (auto& step : other_heads.asked) step.push_back(0);
  EXPECT_THROW(scorer.Add(other_heads), std::invalid_argument);
}

// Synthetic heads over the headline task as the evaluator asks it (4 records, depths 0.1,
// 0.5, 0.9, 1-token keys and values) and its key swap to a random distractor: each head's
// top-1 at its single step, as asked and swapped.
enum Head { kMatcher, kFirstValue, kLastValue, kRandomValue, kBackground, kHeads };

TEST(RetrievalHeadsTest, AMatcherScoresAboutOneCopiersAboutZero) {
  DataConfig d;
  d.key_len = 1;
  d.value_len = 1;
  SyntheticData data(d, 128);
  for (int length : {64, 128}) {
    RetrievalHeadScorer scorer(kHeads, 128, 16);
    Rng pick(7);
    for (double depth : {0.1, 0.5, 0.9}) {
      for (uint64_t seed = 0; seed < 200; ++seed) {
        Rng rng(seed * 7 + length);
        const NiahTask t = MakeNiahTask(data, NiahVariant::kMultiKey, length, depth, 4, &rng);
        const RecordSpan& swap = t.distractors[pick.Below(3)];
        std::vector<int> values = {t.needles[0].value_pos};
        for (const RecordSpan& r : t.distractors) values.push_back(r.value_pos);
        std::sort(values.begin(), values.end());
        RetrievalSample s;
        s.prompt_len = length;
        s.value_len = 1;
        s.needle_value = t.needles[0].value_pos;
        s.swap_value = swap.value_pos;
        auto heads = [&](int asked_value) {
          std::vector<int64_t> top(kHeads);
          top[kMatcher] = asked_value;
          top[kFirstValue] = values.front();
          top[kLastValue] = values.back();
          top[kRandomValue] = values[pick.Below(static_cast<int64_t>(values.size()))];
          top[kBackground] = 0;  // BOS, the usual sink
          return top;
        };
        s.asked = {heads(s.needle_value)};
        s.swapped = {heads(s.swap_value)};
        ASSERT_TRUE(scorer.Add(s));
      }
    }
    const std::vector<double> score = scorer.Scores();
    ASSERT_EQ(score.size(), static_cast<size_t>(kHeads));
    EXPECT_GT(score[kMatcher], 0.9) << length;
    EXPECT_EQ(score[kFirstValue], 0.0) << length;  // the same position both times: exactly 0
    EXPECT_EQ(score[kLastValue], 0.0) << length;
    EXPECT_LT(std::abs(score[kRandomValue]), 0.1) << length;
    EXPECT_EQ(score[kBackground], 0.0);
  }
}

}  // namespace
}  // namespace onset::model
