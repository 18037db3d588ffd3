// The NIAH prompts as JSON lines: the text of the byte vocabulary, and one record per headline
// prompt with the evaluator's own ids.
#include "model/export/niah_prompts.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace onset::model {
namespace {

TEST(ByteVocabTextTest, EveryByteIsOneCharacterInUtf8) {
  EXPECT_EQ(ByteVocabText({'a', 0, '\n'}), std::string("a\0\n", 3));
  EXPECT_EQ(ByteVocabText({0x7F}), "\x7F");
  EXPECT_EQ(ByteVocabText({0x80}), "\xC2\x80");  // U+0080
  EXPECT_EQ(ByteVocabText({0xE9}), "\xC3\xA9");  // U+00E9, é
  EXPECT_EQ(ByteVocabText({0xFF}), "\xC3\xBF");  // U+00FF
  std::vector<Token> all;
  for (Token t = 0; t < kNumByteTokens; ++t) all.push_back(t);
  const std::string text = ByteVocabText(all);
  EXPECT_EQ(text.size(), 128u + 2u * 128u);
  // Valid UTF-8: the JSON writer refuses anything else.
  EXPECT_NO_THROW((void)nlohmann::json(text).dump());
}

TEST(ByteVocabTextTest, SpecialsAndPaddingRowsByName) {
  EXPECT_EQ(ByteVocabText({kBos, kKey, 'k', kVal, 'v', kQry, 'k', kAns, kNone}),
            "\u27e8BOS\u27e9\u27e8K\u27e9k\u27e8V\u27e9v\u27e8Q\u27e9k\u27e8A\u27e9\u27e8N\u27e9");
  EXPECT_EQ(ByteVocabText({262, 263}), "\u27e8PAD0\u27e9\u27e8PAD1\u27e9");
  EXPECT_THROW(ByteVocabText({kVocabSize}), std::invalid_argument);
  EXPECT_THROW(ByteVocabText({-1}), std::invalid_argument);
}

// No byte is a special's bracket: a name can never be read out of a text of bytes.
TEST(ByteVocabTextTest, NoByteSpellsABracket) {
  for (Token t = 0; t < kNumByteTokens; ++t) {
    EXPECT_EQ(ByteVocabText({t}).find("\u27e8"), std::string::npos) << t;
  }
}

CellConfig Cell() {
  CellConfig c;
  auto e = ParseCellConfig(
      {{"model", {{"layers", 1}, {"d_model", 16}, {"heads", 2}, {"seq_len", 32}, {"arch", "full"}}},
       {"data", {{"records_per_seq", 2}, {"key_len", 2}, {"value_len", 3}}},
       {"eval",
        {{"heldout_seqs", 0},
         {"niah_lengths", {32, 48}},
         {"niah_depths", {0.25, 0.75}},
         {"niah_samples", 3},
         {"niah_records", 2}}}},
      &c);
  EXPECT_FALSE(e) << e->ToString();
  return c;
}

TEST(NiahPromptRecordTest, HoldsTheEvaluatorsPromptAndAnswer) {
  const CellConfig config = Cell();
  const SyntheticData data(config.data, config.model.seq_len);
  const Evaluator evaluator(config, data, at::kCPU);
  ASSERT_EQ(evaluator.headline().size(), 2u);
  int records = 0;
  for (const Evaluator::TaskGroup& group : evaluator.headline()) {
    ASSERT_EQ(group.tasks.size(), 6u);  // 2 depths x 3 samples
    for (size_t b = 0; b < group.tasks.size(); ++b) {
      const nlohmann::json r = NiahPromptRecord(group, b, /*text=*/true, nullptr);
      EXPECT_EQ(r["length"], group.length);
      EXPECT_EQ(r["in_length"], group.length <= 32);
      EXPECT_EQ(r["depth"], group.depths[b]);
      EXPECT_EQ(r["sample"], group.sample[b]);
      EXPECT_EQ(r["prompt_ids"].get<std::vector<Token>>(), group.tasks[b].prompt);
      EXPECT_EQ(r["prompt_ids"].size(), static_cast<size_t>(group.length));
      EXPECT_EQ(r["answer_ids"].get<std::vector<Token>>(), group.tasks[b].answers[0]);
      EXPECT_EQ(r["answer_ids"].size(), 3u);
      EXPECT_EQ(r["prompt"], ByteVocabText(group.tasks[b].prompt));
      EXPECT_EQ(r["answer"], ByteVocabText(group.tasks[b].answers[0]));
      EXPECT_EQ(r["distance"], group.tasks[b].needles[0].distance());
      EXPECT_FALSE(r.contains("onset_correct"));
      ++records;
    }
  }
  EXPECT_EQ(records, 12);
}

TEST(NiahPromptRecordTest, TextOnlyWhenAskedAndTheDecodedAnswerScoredAsNiahAcc) {
  const CellConfig config = Cell();
  const SyntheticData data(config.data, config.model.seq_len);
  const Evaluator evaluator(config, data, at::kCPU);
  const Evaluator::TaskGroup& group = evaluator.headline()[0];
  const nlohmann::json ids_only = NiahPromptRecord(group, 0, /*text=*/false, nullptr);
  EXPECT_FALSE(ids_only.contains("prompt"));
  EXPECT_FALSE(ids_only.contains("answer"));

  const std::vector<Token> right = group.tasks[0].answers[0];
  const nlohmann::json hit = NiahPromptRecord(group, 0, /*text=*/true, &right);
  EXPECT_EQ(hit["onset_answer_ids"].get<std::vector<Token>>(), right);
  EXPECT_EQ(hit["onset_answer"], hit["answer"]);
  EXPECT_EQ(hit["onset_correct"], true);

  std::vector<Token> wrong = right;
  wrong.back() = wrong.back() == 'x' ? 'y' : 'x';  // one token off: no partial credit
  EXPECT_EQ(NiahPromptRecord(group, 0, true, &wrong)["onset_correct"], false);
  const std::vector<Token> special = {right[0], right[1], kVal};
  const nlohmann::json s = NiahPromptRecord(group, 0, true, &special);
  EXPECT_EQ(s["onset_correct"], false);
  EXPECT_EQ(s["onset_answer"], ByteVocabText(special));
}

}  // namespace
}  // namespace onset::model
