#include "model/data/background.h"

#include <gtest/gtest.h>

#include <numeric>

#include "model/data/synthetic_data.h"
#include "tests/testing/temp_dir.h"

namespace onset::model {
namespace {

using testutil::TempDir;

// A file whose token i is i % 1000, so a position's value says where in the file it came from.
std::string CountingFile(const TempDir& dir, int n) {
  std::vector<int64_t> ids(n);
  for (int i = 0; i < n; ++i) ids[i] = i % 1000;
  return dir.WriteTokens<uint16_t>("text.bin", ids);
}

DataConfig FileData(const std::string& path, double heldout_fraction = 0.25) {
  DataConfig d;
  d.background = kBackgroundFile;
  d.path = path;
  d.vocab_size = 1000;
  d.heldout_fraction = heldout_fraction;
  return d;
}

TEST(BackgroundTest, FileBackgroundFillsFreePositionsWithConsecutiveText) {
  TempDir dir;
  std::string error;
  std::shared_ptr<const TokenFile> file =
      TokenFile::Open(CountingFile(dir, 800), TokenDtype::kUint16, 1000, &error);
  ASSERT_NE(file, nullptr) << error;
  FileBackground background(file, 100, 200);
  std::vector<bool> taken(40, false);
  for (int i : {0, 5, 6, 7, 30}) taken[i] = true;
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<Token> tokens(40, -1);
    Rng rng(trial);
    background.Fill(taken, &tokens, &rng);
    Token prev = -1;
    for (int i = 0; i < 40; ++i) {
      if (taken[i]) {
        EXPECT_EQ(tokens[i], -1);  // untouched
        continue;
      }
      EXPECT_GE(tokens[i], 100);  // inside the part [100, 200)
      EXPECT_LT(tokens[i], 200);
      if (prev >= 0) {
        EXPECT_EQ(tokens[i], prev + 1);  // the text continues around the gaps
      }
      prev = tokens[i];
    }
  }
}

TEST(BackgroundTest, TrainingAndHeldOutPartsOfOneFileDoNotOverlap) {
  TempDir dir;
  std::string error;
  auto b = OpenBackgrounds(FileData(CountingFile(dir, 800)), 33, 64, &error);
  ASSERT_TRUE(b) << error;
  std::vector<bool> taken(64, false);
  for (int trial = 0; trial < 100; ++trial) {
    std::vector<Token> train(33), heldout(64);
    Rng rng(trial);
    std::vector<bool> t33(33, false);
    b->train->Fill(t33, &train, &rng);
    b->heldout->Fill(taken, &heldout, &rng);
    for (Token t : train) EXPECT_LT(t, 600);    // the first 75%
    for (Token t : heldout) EXPECT_GE(t, 600);  // the last 25%
  }
}

TEST(BackgroundTest, ExplainsWhatIsTooShortAndHowToFixIt) {
  TempDir dir;
  std::string error;
  EXPECT_FALSE(OpenBackgrounds(FileData(CountingFile(dir, 800), 0.05), 33, 64, &error));
  EXPECT_NE(error.find("data.heldout_fraction: the held-out part (the last 0.05"),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("has 40 tokens, fewer than the 64"), std::string::npos) << error;
  EXPECT_NE(error.find("give data.heldout_path"), std::string::npos) << error;

  DataConfig d = FileData(dir.File("absent.bin"));
  EXPECT_FALSE(OpenBackgrounds(d, 33, 64, &error));
  EXPECT_EQ(error.rfind("data.path: " + dir.File("absent.bin") + ": cannot open", 0), 0u) << error;

  d = FileData(CountingFile(dir, 800));
  d.heldout_path = dir.WriteTokens<uint16_t>("val.bin", {1, 2, 3});
  EXPECT_FALSE(OpenBackgrounds(d, 33, 64, &error));
  EXPECT_EQ(error.rfind("data.heldout_path: " + d.heldout_path + " has 3 tokens", 0), 0u) << error;
}

TEST(BackgroundTest, AHeldOutFileServesEvaluationWhole) {
  TempDir dir;
  DataConfig d = FileData(CountingFile(dir, 800));
  std::vector<int64_t> val(64);
  std::iota(val.begin(), val.end(), 900);
  d.heldout_path = dir.WriteTokens<uint16_t>("val.bin", val);
  std::string error;
  auto b = OpenBackgrounds(d, 33, 64, &error);
  ASSERT_TRUE(b) << error;
  std::vector<Token> heldout(64);
  Rng rng(1);
  b->heldout->Fill(std::vector<bool>(64, false), &heldout, &rng);
  EXPECT_EQ(heldout.front(), 900);
  EXPECT_EQ(heldout.back(), 963);
}

TEST(BackgroundTest, RecordsInATokenFileUseMarkersAfterItsVocabulary) {
  TempDir dir;
  DataConfig d = FileData(CountingFile(dir, 4000));
  d.records_per_seq = 3;
  d.key_len = 2;
  d.value_len = 2;
  std::string error;
  auto b = OpenBackgrounds(d, 129, 128, &error);
  ASSERT_TRUE(b) << error;
  SyntheticData data(d, 128, b->train);
  const Vocab& v = data.vocab();
  EXPECT_EQ(v.bos(), 1000);
  EXPECT_EQ(v.size(), 1008);
  Rng rng(3);
  int records = 0;
  for (int i = 0; i < 20; ++i) {
    Sequence s = data.Sample(129, &rng);
    EXPECT_EQ(s.tokens[0], 1000);
    for (const RecordSpan& r : s.records) {
      ++records;
      EXPECT_EQ(s.tokens[r.record_pos], v.key());
      EXPECT_EQ(s.tokens[r.query_pos], v.qry());
      EXPECT_EQ(s.tokens[r.answer_pos], v.ans());
      EXPECT_EQ(s.tokens[r.value_pos - 1], v.val());
    }
    for (Token t : s.tokens) EXPECT_LT(t, v.size());
  }
  EXPECT_GT(records, 20);
}

}  // namespace
}  // namespace onset::model
