#include "model/evaluation/niah_tasks.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

namespace onset::model {
namespace {

DataConfig Data() {
  DataConfig d;
  d.key_len = 2;
  d.value_len = 3;
  return d;
}

std::vector<Token> Slice(const std::vector<Token>& t, int from, int n) {
  return {t.begin() + from, t.begin() + from + n};
}

TEST(NiahTasksTest, NeedleAtTheDepthAndRecordsNeverCollide) {
  SyntheticData data(Data(), 64);
  const int L = 80, k = 2, m = 3, span = k + m + 2, records = 4;
  for (NiahVariant v : {NiahVariant::kSingle, NiahVariant::kMultiKey, NiahVariant::kMultiValue,
                        NiahVariant::kMultiQuery, NiahVariant::kControl}) {
    for (double depth : {0.0, 0.5, 1.0}) {
      for (uint64_t seed = 0; seed < 20; ++seed) {
        Rng rng(seed);
        NiahTask t = MakeNiahTask(data, v, L, depth, records, &rng);
        ASSERT_EQ(static_cast<int>(t.prompt.size()), L);
        EXPECT_EQ(t.prompt[0], kBos);
        EXPECT_EQ(t.prompt.back(), kAns);
        EXPECT_EQ(t.prompt[L - k - 2], kQry);
        const int n = v == NiahVariant::kSingle ? 1 : records;
        std::vector<RecordSpan> all = t.needles;
        all.insert(all.end(), t.distractors.begin(), t.distractors.end());
        ASSERT_EQ(static_cast<int>(all.size()), n);
        ASSERT_EQ(static_cast<int>(t.values.size()), n);
        EXPECT_EQ(std::count(t.prompt.begin(), t.prompt.end(), kKey), n);
        EXPECT_EQ(std::count(t.prompt.begin(), t.prompt.end(), kQry), 1);
        const int last = L - k - 2 - 1 - span;
        EXPECT_NEAR(static_cast<double>(all[0].record_pos - 1) / (last - 1), depth, 0.03);
        for (size_t a = 0; a < all.size(); ++a) {
          EXPECT_EQ(t.prompt[all[a].record_pos], kKey);
          EXPECT_EQ(all[a].answer_pos, L - 1);
          EXPECT_LE(all[a].record_pos + span, L - k - 2 - 1);  // clear of the question
          for (size_t b = a + 1; b < all.size(); ++b) {
            const int lo = std::min(all[a].record_pos, all[b].record_pos);
            const int hi = std::max(all[a].record_pos, all[b].record_pos);
            EXPECT_GE(hi - lo, span) << "records overlap";
          }
        }
        const std::vector<Token> asked = Slice(t.prompt, L - k - 1, k);
        for (size_t a = 0; a < all.size(); ++a) {
          const std::vector<Token> key = Slice(t.prompt, all[a].record_pos + 1, k);
          // The control asks a key no record has; only multi-value repeats the asked key; in
          // the others only the needle has it.
          const bool expected =
              v != NiahVariant::kControl && (a == 0 || v == NiahVariant::kMultiValue);
          EXPECT_EQ(key == asked, expected);
          EXPECT_EQ(Slice(t.prompt, all[a].value_pos, m), t.values[a]);
        }
        for (int r = 0; r < static_cast<int>(t.answers.size()); ++r) {
          EXPECT_EQ(Slice(t.prompt, t.needles[r].value_pos, m), t.answers[r]);
        }
        EXPECT_EQ(t.answers.empty(), v == NiahVariant::kControl);
        const int rounds =
            v == NiahVariant::kMultiValue || v == NiahVariant::kMultiQuery ? records : 1;
        EXPECT_EQ(t.rounds(), rounds);
      }
    }
  }
  Rng rng(0);
  EXPECT_THROW(MakeNiahTask(data, NiahVariant::kMultiKey,
                            MinNiahTaskLength(data, NiahVariant::kMultiKey, 4) - 1, 0.5, 4, &rng),
               std::invalid_argument);
  EXPECT_NO_THROW(MakeNiahTask(data, NiahVariant::kMultiKey,
                               MinNiahTaskLength(data, NiahVariant::kMultiKey, 4), 0.5, 4, &rng));
  EXPECT_THROW(ParseNiahVariant("multi"), std::invalid_argument);
}

TEST(NiahTasksTest, DistractorsAreSpreadOverTheWholeHaystack) {
  SyntheticData data(Data(), 256);
  int before = 0, after = 0;
  for (uint64_t seed = 0; seed < 200; ++seed) {
    Rng rng(seed);
    NiahTask t = MakeNiahTask(data, NiahVariant::kMultiKey, 256, 0.5, 4, &rng);
    for (const RecordSpan& d : t.distractors) {
      (d.record_pos < t.needles[0].record_pos ? before : after) += 1;
    }
  }
  // Equal stretches on both sides of a needle at depth 0.5: about half the distractors each.
  EXPECT_NEAR(static_cast<double>(before) / (before + after), 0.5, 0.06);
}

// A "model" that copies without matching keys: the value after the first <V> of the prompt.
std::vector<Token> CopyFirstValue(const NiahTask& t, int m) {
  const auto v = std::find(t.prompt.begin(), t.prompt.end(), kVal);
  return {v + 1, v + 1 + m};
}

// A "model" that retrieves: the value of the record whose key is the one asked, else <A>.
std::vector<Token> MatchKey(const NiahTask& t, int k, int m) {
  const int L = static_cast<int>(t.prompt.size());
  const std::vector<Token> asked = Slice(t.prompt, L - k - 1, k);
  for (int p = 0; p + k + 1 + m < L - k - 2; ++p) {
    if (t.prompt[p] == kKey && Slice(t.prompt, p + 1, k) == asked)
      return Slice(t.prompt, p + k + 2, m);
  }
  return std::vector<Token>(m, kAns);
}

TEST(NiahTasksTest, CopyingTheOnlyValueSolvesSingleButNotMultiKey) {
  SyntheticData data(Data(), 256);
  const int k = 2, m = 3, records = 4;
  double single = 0, multi = 0, matched = 0, copy_rate_copier = 0, copy_rate_matcher = 0;
  int n = 0;
  for (int d = 0; d <= 10; ++d) {  // depths 0, 0.1, ..., 1
    for (uint64_t seed = 0; seed < 40; ++seed, ++n) {
      Rng a(seed), b(seed + 1000), c(seed + 2000);
      const NiahTask s = MakeNiahTask(data, NiahVariant::kSingle, 200, d / 10.0, records, &a);
      const NiahTask mk = MakeNiahTask(data, NiahVariant::kMultiKey, 200, d / 10.0, records, &b);
      const NiahTask ctl = MakeNiahTask(data, NiahVariant::kControl, 200, d / 10.0, records, &c);
      single += ScoreNiahTask(s, {CopyFirstValue(s, m)});
      multi += ScoreNiahTask(mk, {CopyFirstValue(mk, m)});
      matched += ScoreNiahTask(mk, {MatchKey(mk, k, m)});
      copy_rate_copier += CopiedRecordValue(ctl, CopyFirstValue(ctl, m));
      copy_rate_matcher += CopiedRecordValue(ctl, MatchKey(ctl, k, m));
    }
  }
  EXPECT_DOUBLE_EQ(single / n, 1.0);             // the shortcut is perfect on single-needle
  EXPECT_NEAR(multi / n, 1.0 / records, 0.07);   // and chance on multi-key over depths
  EXPECT_DOUBLE_EQ(matched / n, 1.0);            // retrieval solves multi-key
  EXPECT_DOUBLE_EQ(copy_rate_copier / n, 1.0);   // the control exposes the copier
  EXPECT_DOUBLE_EQ(copy_rate_matcher / n, 0.0);  // and not the retriever
}

// The key-swap control: the same prompt asking a distractor's key. A copier's answer does not
// change (rate 1), a matcher's always does (rate 0: values are distinct).
TEST(NiahTasksTest, AKeySwapChangesAMatchersAnswerAndNotACopiers) {
  SyntheticData data(Data(), 256);
  const int k = 2, m = 3, records = 4;
  int n = 0, copier_same = 0, matcher_same = 0, matcher_right = 0;
  for (double depth : {0.1, 0.5, 0.9}) {
    for (uint64_t seed = 0; seed < 50; ++seed, ++n) {
      Rng rng(seed);
      const NiahTask t = MakeNiahTask(data, NiahVariant::kMultiKey, 200, depth, records, &rng);
      const size_t d = seed % t.distractors.size();
      NiahTask swapped = t;
      swapped.prompt = KeySwapPrompt(t, d, k);
      // Only the question's key changed, to the distractor's.
      EXPECT_EQ(Slice(swapped.prompt, t.needles[0].query_pos + 1, k),
                Slice(t.prompt, t.distractors[d].record_pos + 1, k));
      int differing = 0;
      for (size_t i = 0; i < t.prompt.size(); ++i) differing += t.prompt[i] != swapped.prompt[i];
      EXPECT_GE(differing, 1);
      EXPECT_LE(differing, k);
      copier_same += CopyFirstValue(t, m) == CopyFirstValue(swapped, m);
      matcher_same += MatchKey(t, k, m) == MatchKey(swapped, k, m);
      matcher_right += MatchKey(swapped, k, m) == Slice(t.prompt, t.distractors[d].value_pos, m);
    }
  }
  EXPECT_EQ(copier_same, n);
  EXPECT_EQ(matcher_same, 0);
  EXPECT_EQ(matcher_right, n);
  Rng rng(0);
  const NiahTask single = MakeNiahTask(data, NiahVariant::kSingle, 100, 0.5, 1, &rng);
  EXPECT_THROW(KeySwapPrompt(single, 0, k), std::invalid_argument);
}

TEST(NiahTasksTest, KeysComeFromTheKeyAlphabetAndValuesFromAllBytes) {
  DataConfig d = Data();
  d.key_len = 1;
  d.key_alphabet = 8;
  SyntheticData data(d, 128);
  std::set<Token> keys, values;
  for (uint64_t seed = 0; seed < 50; ++seed) {
    Rng rng(seed);
    const NiahTask t = MakeNiahTask(data, NiahVariant::kControl, 128, 0.5, 4, &rng);
    for (const RecordSpan& r : t.distractors) keys.insert(t.prompt[r.record_pos + 1]);
    keys.insert(t.prompt[128 - 2]);  // the asked key, in no record
    for (const auto& v : t.values) values.insert(v.begin(), v.end());
    Sequence s = data.Sample(128, &rng);
    for (const RecordSpan& r : s.records) keys.insert(s.tokens[r.record_pos + 1]);
  }
  EXPECT_EQ(keys.size(), 8u);
  EXPECT_LT(*keys.rbegin(), 8);
  EXPECT_GT(values.size(), 100u);
}

TEST(NiahTasksTest, RecordsWithoutTheValueMarker) {
  DataConfig d = Data();
  d.value_marker = false;
  SyntheticData data(d, 128);
  for (uint64_t seed = 0; seed < 20; ++seed) {
    Rng rng(seed);
    const NiahTask t = MakeNiahTask(data, NiahVariant::kMultiKey, 80, 0.5, 4, &rng);
    EXPECT_EQ(std::count(t.prompt.begin(), t.prompt.end(), kVal), 0);
    std::vector<RecordSpan> all = t.needles;
    all.insert(all.end(), t.distractors.begin(), t.distractors.end());
    for (size_t a = 0; a < all.size(); ++a) {
      EXPECT_EQ(all[a].value_pos, all[a].record_pos + 3);  // <K> k1 k2 v1
      EXPECT_EQ(Slice(t.prompt, all[a].value_pos, 3), t.values[a]);
      for (size_t b = a + 1; b < all.size(); ++b) {
        EXPECT_GE(std::abs(all[a].record_pos - all[b].record_pos), 6) << "records overlap";
      }
    }
  }
}

TEST(NiahTasksTest, PromptsEndWithTheKeyWithoutTheAnswerMarker) {
  DataConfig d = Data();
  d.value_marker = false;
  d.answer_marker = false;
  SyntheticData data(d, 128);
  Rng rng(3);
  const NiahTask t = MakeNiahTask(data, NiahVariant::kMultiKey, 80, 0.5, 4, &rng);
  EXPECT_EQ(t.prompt[80 - 3], kQry);
  EXPECT_EQ(Slice(t.prompt, 80 - 2, 2), Slice(t.prompt, t.needles[0].record_pos + 1, 2));
  EXPECT_EQ(std::count(t.prompt.begin(), t.prompt.end(), kAns), 0);
  EXPECT_EQ(t.needles[0].answer_pos, 79);
}

TEST(NiahTasksTest, ScorerCountsExactly) {
  NiahTask t;
  t.variant = NiahVariant::kMultiQuery;
  t.answers = {{1, 2, 3}, {4, 5, 6}, {7, 8, 9}};
  t.suffixes = {{}, {}};
  EXPECT_DOUBLE_EQ(ScoreNiahTask(t, {{1, 2, 3}, {4, 5, 0}, {7, 8, 9}}), 2.0 / 3);
  t.variant = NiahVariant::kMultiValue;
  // Values may come in any order; a value decoded twice counts once.
  EXPECT_DOUBLE_EQ(ScoreNiahTask(t, {{7, 8, 9}, {1, 2, 3}, {7, 8, 9}}), 2.0 / 3);
  EXPECT_DOUBLE_EQ(ScoreNiahTask(t, {{4, 5, 6}, {7, 8, 9}, {1, 2, 3}}), 1.0);
  t.variant = NiahVariant::kMultiKey;
  t.answers = {{1, 2, 3}};
  t.suffixes.clear();
  EXPECT_DOUBLE_EQ(ScoreNiahTask(t, {{1, 2, 3}}), 1.0);
  EXPECT_DOUBLE_EQ(ScoreNiahTask(t, {{1, 2, 4}}), 0.0);
  EXPECT_THROW(ScoreNiahTask(t, {}), std::invalid_argument);
  t.variant = NiahVariant::kControl;
  t.values = {{1, 2, 3}, {4, 5, 6}};
  EXPECT_THROW(ScoreNiahTask(t, {{1, 2, 3}}), std::invalid_argument);
  EXPECT_TRUE(CopiedRecordValue(t, {4, 5, 6}));
  EXPECT_FALSE(CopiedRecordValue(t, {4, 5, 7}));
}

}  // namespace
}  // namespace onset::model
