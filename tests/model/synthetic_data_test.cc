#include "model/synthetic_data.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>

namespace onset::model {
namespace {

DataConfig Data() {
  DataConfig d;
  d.key_len = 2;
  d.value_len = 3;
  d.records_per_seq = 3.0;
  return d;
}

TEST(SyntheticDataTest, ChainHasTheConfiguredBranching) {
  MarkovChain chain(8, 1.1, 42);
  Rng rng(1);
  for (Token a : {0, 17, 255}) {
    const auto& succ = chain.Successors(a);
    EXPECT_EQ(succ.size(), 8u);
    EXPECT_EQ(std::set<Token>(succ.begin(), succ.end()).size(), 8u);
    for (int i = 0; i < 200; ++i) {
      Token b = chain.Next(a, &rng);
      EXPECT_NE(std::find(succ.begin(), succ.end(), b), succ.end());
    }
  }
}

TEST(SyntheticDataTest, RecordsAreRetrievable) {
  SyntheticData data(Data(), 256);
  SequenceStream stream(&data, 7, 257);
  int records = 0;
  for (int n = 0; n < 200; ++n) {
    Sequence s = stream.Next();
    ASSERT_EQ(s.tokens.size(), 257u);
    EXPECT_EQ(s.tokens[0], kBos);
    for (const RecordSpan& r : s.records) {
      ++records;
      EXPECT_EQ(s.tokens[r.record_pos], kKey);
      EXPECT_EQ(s.tokens[r.value_pos - 1], kVal);
      EXPECT_EQ(s.tokens[r.query_pos], kQry);
      EXPECT_EQ(s.tokens[r.answer_pos], kAns);
      for (int i = 0; i < 2; ++i) {
        EXPECT_EQ(s.tokens[r.record_pos + 1 + i], s.tokens[r.query_pos + 1 + i]);  // same key
      }
      for (int i = 0; i < 3; ++i) {
        EXPECT_TRUE(IsByteToken(s.tokens[r.value_pos + i]));
        EXPECT_EQ(s.tokens[r.answer_pos + 1 + i], s.tokens[r.value_pos + i]);  // the answer
      }
      EXPECT_GE(r.distance(), data.min_distance());
      EXPECT_EQ(r.distance(), r.answer_pos - r.value_pos);
    }
  }
  // Poisson(3) records per sequence, a few lost to collisions.
  EXPECT_GT(records, 200 * 2.5);
  EXPECT_LT(records, 200 * 3.5);
}

TEST(SyntheticDataTest, DistancesSpreadLogUniformly) {
  SyntheticData data(Data(), 256);
  SequenceStream stream(&data, 3, 257);
  int short_d = 0, long_d = 0;
  for (int n = 0; n < 400; ++n) {
    for (const RecordSpan& r : stream.Next().records) {
      short_d += r.distance() < 32;
      long_d += r.distance() >= 64;
    }
  }
  // log-uniform over [8, 256]: P(d < 32) = 0.4, P(d >= 64) = 0.4 before clamping.
  EXPECT_GT(short_d, 300);
  EXPECT_GT(long_d, 300);
}

TEST(SyntheticDataTest, StreamsAreDeterministicAndDistinct) {
  SyntheticData data(Data(), 64);
  SequenceStream a(&data, MixSeed(5, kTrainStream), 65), b(&data, MixSeed(5, kTrainStream), 65);
  SequenceStream heldout(&data, MixSeed(0, kHeldoutStream), 65);
  Sequence sa = a.Next();
  EXPECT_EQ(sa.tokens, b.Next().tokens);
  EXPECT_NE(sa.tokens, heldout.Next().tokens);
  EXPECT_NE(sa.tokens, a.Next().tokens);
}

TEST(SyntheticDataTest, NiahPlacesTheNeedleAtTheRequestedDepth) {
  SyntheticData data(Data(), 256);
  const int L = 200;
  for (double depth : {0.0, 0.25, 0.5, 0.9, 1.0}) {
    Rng rng(11);
    NiahSample s = data.Niah(L, depth, &rng);
    ASSERT_EQ(static_cast<int>(s.prompt.size()), L);
    EXPECT_EQ(s.prompt[0], kBos);
    EXPECT_EQ(s.prompt.back(), kAns);
    EXPECT_EQ(s.needle.answer_pos, L - 1);
    EXPECT_EQ(s.prompt[s.needle.record_pos], kKey);
    EXPECT_EQ(s.prompt[s.needle.query_pos], kQry);
    // Relative depth of <K> between the first and the last admissible position.
    const int last = s.needle.query_pos - 1 - (2 + 3 + 2);
    EXPECT_NEAR(static_cast<double>(s.needle.record_pos - 1) / (last - 1), depth, 0.01);
    for (int i = 0; i < 3; ++i) EXPECT_EQ(s.prompt[s.needle.value_pos + i], s.answer[i]);
    EXPECT_EQ(s.needle.distance(), L - 1 - s.needle.value_pos);
    // Exactly one record and one query in the prompt.
    EXPECT_EQ(std::count(s.prompt.begin(), s.prompt.end(), kKey), 1);
    EXPECT_EQ(std::count(s.prompt.begin(), s.prompt.end(), kQry), 1);
  }
  Rng rng(1);
  EXPECT_THROW(data.Niah(data.MinNiahLength() - 1, 0.5, &rng), std::invalid_argument);
  EXPECT_NO_THROW(data.Niah(data.MinNiahLength(), 0.5, &rng));
}

TEST(SyntheticDataTest, ExactMatchNeedsEveryValueToken) {
  EXPECT_TRUE(ExactMatch({1, 2, 3}, {1, 2, 3}));
  EXPECT_TRUE(ExactMatch({1, 2, 3, 9}, {1, 2, 3}));
  EXPECT_FALSE(ExactMatch({1, 2, 4}, {1, 2, 3}));
  EXPECT_FALSE(ExactMatch({1, 2}, {1, 2, 3}));
  EXPECT_FALSE(ExactMatch({0, 2, 3}, {1, 2, 3}));
}

TEST(RngTest, PoissonHasTheRightMean) {
  Rng rng(3);
  double sum = 0;
  for (int i = 0; i < 20000; ++i) sum += rng.Poisson(2.0);
  EXPECT_NEAR(sum / 20000, 2.0, 0.05);
}

}  // namespace
}  // namespace onset::model
