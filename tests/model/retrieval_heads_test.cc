#include "model/retrieval_heads.h"

#include <gtest/gtest.h>

namespace onset::model {
namespace {

// Prompt: 10 tokens with the value 41 42 43 4 at positions 3..6, then the 4 generated tokens.
RetrievalSample Sample(const std::vector<Token>& generated) {
  RetrievalSample s;
  s.sequence = {1, 2, 3, 41, 42, 43, 44, 7, 8, 9};
  s.sequence.insert(s.sequence.end(), generated.begin(), generated.end());
  s.prompt_len = 10;
  s.value_begin = 3;
  s.value_len = 4;
  return s;
}

// Heads: 0 copies (top-1 on value token s at step s), 1 attends the background, 2 copies on
// the first two steps only, 3 sits on the value span but on the wrong token.
std::vector<std::vector<int64_t>> Top1() {
  return {{3, 0, 3, 4}, {4, 8, 4, 5}, {5, 9, 1, 6}, {6, 1, 2, 3}};
}

TEST(RetrievalHeadsTest, CopyHeadScoresOneOthersCountExactly) {
  RetrievalSample s = Sample({41, 42, 43, 44});
  s.top1 = Top1();
  std::vector<double> score = SampleRetrievalScores(s);
  ASSERT_EQ(score.size(), 4u);
  EXPECT_DOUBLE_EQ(score[0], 1.0);
  EXPECT_DOUBLE_EQ(score[1], 0.0);
  EXPECT_DOUBLE_EQ(score[2], 0.5);
  EXPECT_DOUBLE_EQ(score[3], 0.0);
  EXPECT_TRUE(MostlyRight(s));
}

// The token at the attended position must equal the token generated, not the right answer.
TEST(RetrievalHeadsTest, WrongGenerationsDoNotCount) {
  RetrievalSample s = Sample({41, 42, 99, 99});  // half right
  s.top1 = Top1();
  std::vector<double> score = SampleRetrievalScores(s);
  EXPECT_DOUBLE_EQ(score[0], 0.5);  // steps 2 and 3 generated 99, not the attended token
  EXPECT_TRUE(MostlyRight(s));
  s.sequence[11] = 99;  // one of four right
  EXPECT_FALSE(MostlyRight(s));
}

TEST(RetrievalHeadsTest, ScorerAveragesOverAllAndOverMostlyRightSamples) {
  RetrievalHeadScorer scorer(4);
  RetrievalSample right = Sample({41, 42, 43, 44});
  right.top1 = Top1();
  RetrievalSample wrong = Sample({99, 99, 99, 44});
  wrong.top1 = Top1();  // head 0 scores 0.25 (last step)
  scorer.Add(right);
  scorer.Add(wrong);
  EXPECT_EQ(scorer.samples(), 2);
  EXPECT_EQ(scorer.mostly_right_samples(), 1);
  std::vector<double> all = scorer.Scores(), kept = scorer.MostlyRightScores();
  EXPECT_DOUBLE_EQ(all[0], (1.0 + 0.25) / 2);
  EXPECT_DOUBLE_EQ(all[2], 0.5 / 2);
  EXPECT_DOUBLE_EQ(kept[0], 1.0);
  EXPECT_DOUBLE_EQ(kept[2], 0.5);
  RetrievalHeadScorer empty(4);
  EXPECT_TRUE(empty.MostlyRightScores().empty());
  EXPECT_EQ(empty.Scores(), std::vector<double>(4, 0.0));
}

}  // namespace
}  // namespace onset::model
