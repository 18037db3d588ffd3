#include "model/niah_tasks.h"

#include <gtest/gtest.h>

#include <algorithm>

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
  const int L = 60, k = 2, m = 3, span = k + m + 2;
  for (NiahVariant v : {NiahVariant::kSingle, NiahVariant::kMultiKey, NiahVariant::kMultiValue,
                        NiahVariant::kMultiQuery}) {
    for (double depth : {0.0, 0.5, 1.0}) {
      for (uint64_t seed = 0; seed < 20; ++seed) {
        Rng rng(seed);
        NiahTask t = MakeNiahTask(data, v, L, depth, &rng);
        ASSERT_EQ(static_cast<int>(t.prompt.size()), L);
        EXPECT_EQ(t.prompt.back(), kAns);
        EXPECT_EQ(t.prompt[L - k - 2], kQry);
        const int n = v == NiahVariant::kSingle ? 1 : kVariantRecords;
        std::vector<RecordSpan> all = t.needles;
        all.insert(all.end(), t.distractors.begin(), t.distractors.end());
        ASSERT_EQ(static_cast<int>(all.size()), n);
        EXPECT_EQ(std::count(t.prompt.begin(), t.prompt.end(), kKey), n);
        EXPECT_EQ(std::count(t.prompt.begin(), t.prompt.end(), kQry), 1);
        const int last = L - k - 2 - 1 - span;
        EXPECT_NEAR(static_cast<double>(t.needles[0].record_pos - 1) / (last - 1), depth, 0.03);
        for (size_t a = 0; a < all.size(); ++a) {
          EXPECT_EQ(t.prompt[all[a].record_pos], kKey);
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
          // Only multi-value repeats the asked key; distractor keys never equal it.
          EXPECT_EQ(key == asked, a == 0 || v == NiahVariant::kMultiValue);
        }
        for (int r = 0; r < t.rounds(); ++r) {
          EXPECT_EQ(Slice(t.prompt, t.needles[r].value_pos, m), t.answers[r]);
        }
        EXPECT_EQ(static_cast<int>(t.suffixes.size()), t.rounds() - 1);
      }
    }
  }
  Rng rng(0);
  EXPECT_THROW(MakeNiahTask(data, NiahVariant::kMultiKey,
                            MinNiahTaskLength(data, NiahVariant::kMultiKey) - 1, 0.5, &rng),
               std::invalid_argument);
  EXPECT_THROW(ParseNiahVariant("multi"), std::invalid_argument);
}

TEST(NiahTasksTest, ScorerCountsExactly) {
  NiahTask t;
  t.variant = NiahVariant::kMultiQuery;
  t.answers = {{1, 2, 3}, {4, 5, 6}, {7, 8, 9}};
  EXPECT_DOUBLE_EQ(ScoreNiahTask(t, {{1, 2, 3}, {4, 5, 0}, {7, 8, 9}}), 2.0 / 3);
  t.variant = NiahVariant::kMultiValue;
  // Values may come in any order; a value decoded twice counts once.
  EXPECT_DOUBLE_EQ(ScoreNiahTask(t, {{7, 8, 9}, {1, 2, 3}, {7, 8, 9}}), 2.0 / 3);
  EXPECT_DOUBLE_EQ(ScoreNiahTask(t, {{4, 5, 6}, {7, 8, 9}, {1, 2, 3}}), 1.0);
  t.variant = NiahVariant::kMultiKey;
  t.answers = {{1, 2, 3}};
  EXPECT_DOUBLE_EQ(ScoreNiahTask(t, {{1, 2, 3}}), 1.0);
  EXPECT_DOUBLE_EQ(ScoreNiahTask(t, {{1, 2, 4}}), 0.0);
  EXPECT_THROW(ScoreNiahTask(t, {}), std::invalid_argument);
}

}  // namespace
}  // namespace onset::model
