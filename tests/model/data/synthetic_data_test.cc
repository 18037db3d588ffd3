#include "model/data/synthetic_data.h"

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

// Without the <V> marker a record is <K> key value, and distances keep their meaning: the <A>
// position minus the value's first position.
TEST(SyntheticDataTest, RecordsWithoutTheValueMarker) {
  DataConfig d = Data();
  d.value_marker = false;
  d.records_per_seq = 4;
  SyntheticData data(d, 256);
  int records = 0;
  for (uint64_t seed = 0; seed < 30; ++seed) {
    Rng rng(seed);
    const Sequence s = data.Sample(256, &rng);
    EXPECT_EQ(std::count(s.tokens.begin(), s.tokens.end(), kVal), 0);
    for (const RecordSpan& r : s.records) {
      ++records;
      ASSERT_EQ(s.tokens[r.record_pos], kKey);
      EXPECT_EQ(r.value_pos, r.record_pos + 3);  // <K> k1 k2 v1
      ASSERT_EQ(s.tokens[r.query_pos], kQry);
      EXPECT_EQ(s.tokens[r.answer_pos], kAns);
      EXPECT_GE(r.distance(), data.min_distance());
      for (int i = 0; i < 2; ++i) {
        EXPECT_EQ(s.tokens[r.record_pos + 1 + i], s.tokens[r.query_pos + 1 + i]);  // the key
      }
      for (int i = 0; i < 3; ++i) {
        EXPECT_EQ(s.tokens[r.value_pos + i], s.tokens[r.answer_pos + 1 + i]);  // the value
      }
    }
  }
  EXPECT_GT(records, 60);
}

// Without either marker records and queries read alike, `<K> key value` and `<Q> key value`:
// the answer follows the key, and answer_pos is the key's last token.
TEST(SyntheticDataTest, QueriesWithoutTheAnswerMarker) {
  DataConfig d = Data();
  d.value_marker = false;
  d.answer_marker = false;
  d.records_per_seq = 4;
  SyntheticData data(d, 256);
  int records = 0;
  for (uint64_t seed = 0; seed < 30; ++seed) {
    Rng rng(seed);
    const Sequence s = data.Sample(256, &rng);
    EXPECT_EQ(std::count(s.tokens.begin(), s.tokens.end(), kAns), 0);
    for (const RecordSpan& r : s.records) {
      ++records;
      ASSERT_EQ(s.tokens[r.query_pos], kQry);
      EXPECT_EQ(r.answer_pos, r.query_pos + 2);  // <Q> k1 k2, then v1
      EXPECT_GE(r.distance(), data.min_distance());
      for (int i = 0; i < 3; ++i) {
        EXPECT_EQ(s.tokens[r.value_pos + i], s.tokens[r.answer_pos + 1 + i]);
      }
    }
  }
  EXPECT_GT(records, 60);
}

// Absent-key queries ask a key no record of the sequence has and are answered by <N> tokens.
TEST(SyntheticDataTest, AbsentQueriesAskKeysNoRecordHas) {
  DataConfig d = Data();
  d.absent_queries = 1.0;
  d.records_per_seq = 3;
  SyntheticData data(d, 256);
  int absent = 0;
  for (uint64_t seed = 0; seed < 30; ++seed) {
    Rng rng(seed);
    const Sequence s = data.Sample(256, &rng);
    std::vector<std::vector<Token>> keys;
    for (const RecordSpan& r : s.records) {
      keys.emplace_back(s.tokens.begin() + r.record_pos + 1, s.tokens.begin() + r.record_pos + 3);
    }
    for (int q : s.absent_queries) {
      ++absent;
      ASSERT_EQ(s.tokens[q], kQry);
      const std::vector<Token> key(s.tokens.begin() + q + 1, s.tokens.begin() + q + 3);
      EXPECT_EQ(std::count(keys.begin(), keys.end(), key), 0);
      EXPECT_EQ(s.tokens[q + 3], kAns);
      for (int i = 0; i < 3; ++i) EXPECT_EQ(s.tokens[q + 4 + i], kNone);
    }
    EXPECT_EQ(std::count(s.tokens.begin(), s.tokens.end(), kNone), 3 * s.absent_queries.size());
  }
  EXPECT_GT(absent, 50);  // about one per record
  // Off by default: no <N> anywhere.
  SyntheticData plain(Data(), 256);
  Rng rng(1);
  const Sequence s = plain.Sample(256, &rng);
  EXPECT_EQ(std::count(s.tokens.begin(), s.tokens.end(), kNone), 0);
}

// Background tokens are the byte tokens the chain wrote: every special marker, record key and
// value, question and answer is left out, absent-key queries included.
TEST(SyntheticDataTest, BackgroundTokensLeaveOutRecordsQuestionsAndAnswers) {
  DataConfig d = Data();
  d.absent_queries = 0.5;
  SyntheticData data(d, 128);
  Rng rng(3);
  int records = 0, absent = 0;
  for (int i = 0; i < 50; ++i) {
    const Sequence seq = data.Sample(128, &rng);
    const std::vector<bool> background = BackgroundTokens(seq, d);
    ASSERT_EQ(background.size(), seq.tokens.size());
    EXPECT_FALSE(background[0]);  // BOS
    std::vector<bool> expected(seq.tokens.size(), true);
    expected[0] = false;
    for (const RecordSpan& r : seq.records) {
      for (int p = r.record_pos; p < r.value_pos + d.value_len; ++p) expected[p] = false;
      for (int p = r.query_pos; p <= r.answer_pos + d.value_len; ++p) expected[p] = false;
      ++records;
    }
    for (int q : seq.absent_queries) {
      for (int p = q; p < q + d.question_len() + d.value_len; ++p) expected[p] = false;
      ++absent;
    }
    EXPECT_EQ(background, expected);
    for (size_t p = 0; p < seq.tokens.size(); ++p) {
      if (background[p]) {
        EXPECT_LT(seq.tokens[p], kNumByteTokens) << p;  // no marker
      }
    }
  }
  EXPECT_GT(records, 50);
  EXPECT_GT(absent, 10);
}

// Answer tokens are the value after each question and the <N> tokens of an absent key.
TEST(SyntheticDataTest, AnswerTokensAreTheValuesThatFollowAQuestion) {
  DataConfig d = Data();
  d.absent_queries = 0.5;
  SyntheticData data(d, 128);
  Rng rng(4);
  int answers = 0;
  for (int i = 0; i < 50; ++i) {
    const Sequence seq = data.Sample(128, &rng);
    const std::vector<bool> answer = AnswerTokens(seq, d);
    std::vector<bool> expected(seq.tokens.size(), false);
    for (const RecordSpan& r : seq.records) {
      for (int p = r.answer_pos + 1; p <= r.answer_pos + d.value_len; ++p) {
        expected[p] = true;
        EXPECT_EQ(seq.tokens[p], seq.tokens[r.value_pos + (p - r.answer_pos - 1)]);
        ++answers;
      }
    }
    for (int q : seq.absent_queries) {
      for (int p = q + d.question_len(); p < q + d.question_len() + d.value_len; ++p) {
        expected[p] = true;
        EXPECT_EQ(seq.tokens[p], kNone);
      }
    }
    EXPECT_EQ(answer, expected);
  }
  EXPECT_GT(answers, 100);
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
