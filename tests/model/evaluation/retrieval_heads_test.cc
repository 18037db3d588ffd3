#include "model/evaluation/retrieval_heads.h"

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
  EXPECT_TRUE(AnsweredRight(s));
}

// The token at the attended position must equal the token generated, not the right answer.
TEST(RetrievalHeadsTest, WrongGenerationsDoNotCount) {
  RetrievalSample s = Sample({41, 42, 99, 99});  // half right
  s.top1 = Top1();
  std::vector<double> score = SampleRetrievalScores(s);
  EXPECT_DOUBLE_EQ(score[0], 0.5);  // steps 2 and 3 generated 99, not the attended token
  EXPECT_FALSE(AnsweredRight(s));
}

// A perfect copying head in a model that is right 30% of the time: over the right answers it
// scores 1.0; averaged over every sample it would read 0.3 and could never precede accuracy.
TEST(RetrievalHeadsTest, APerfectHeadAtThirtyPercentAccuracyScoresOne) {
  RetrievalHeadScorer scorer(4, /*max_prompt_len=*/10);
  for (int i = 0; i < 10; ++i) {
    RetrievalSample s = i < 3 ? Sample({41, 42, 43, 44}) : Sample({99, 98, 97, 96});
    s.top1 = Top1();
    EXPECT_EQ(scorer.Add(s), i < 3);
  }
  EXPECT_EQ(scorer.samples(), 3);
  EXPECT_EQ(scorer.seen(), 10);
  const std::vector<double> score = scorer.Scores();
  EXPECT_DOUBLE_EQ(score[0], 1.0);
  EXPECT_DOUBLE_EQ(score[2], 0.5);
}

// Prompts longer than the training length do not count, right or not; with nothing counted
// there is no score at all (not a 0 that reads as "no retrieval head").
TEST(RetrievalHeadsTest, OnlyRightAnswersWithinTheTrainingLengthCount) {
  RetrievalHeadScorer scorer(4, /*max_prompt_len=*/9);
  RetrievalSample s = Sample({41, 42, 43, 44});  // prompt of 10 tokens
  s.top1 = Top1();
  EXPECT_FALSE(scorer.Add(s));
  EXPECT_EQ(scorer.samples(), 0);
  EXPECT_TRUE(scorer.Scores().empty());
  RetrievalSample other_heads = s;
  other_heads.top1 = {{3, 0}, {4, 8}, {5, 9}, {6, 1}};
  EXPECT_THROW(scorer.Add(other_heads), std::invalid_argument);
}

}  // namespace
}  // namespace onset::model
