#include "model/export/niah_prompts.h"

#include <stdexcept>

namespace onset::model {

std::string ByteVocabText(const std::vector<Token>& ids) {
  std::string text;
  text.reserve(ids.size() * 2);
  for (Token t : ids) {
    if (t >= 0 && t < kNumByteTokens) {
      const auto c = static_cast<unsigned>(t);
      if (c < 0x80) {
        text.push_back(static_cast<char>(c));
      } else {  // U+0080..U+00FF in UTF-8: two bytes
        text.push_back(static_cast<char>(0xC0 | (c >> 6)));
        text.push_back(static_cast<char>(0x80 | (c & 0x3F)));
      }
    } else if (t >= kNumByteTokens && t < kNumByteTokens + kNumSpecialTokens) {
      text += kSpecialTokenNames[t - kNumByteTokens];
    } else if (t >= kNumByteTokens + kNumSpecialTokens && t < kVocabSize) {
      text += "\u27e8PAD" + std::to_string(t - kNumByteTokens - kNumSpecialTokens) + "\u27e9";
    } else {
      throw std::invalid_argument("token id " + std::to_string(t) +
                                  " is outside the byte vocabulary's " +
                                  std::to_string(kVocabSize) + " ids");
    }
  }
  return text;
}

nlohmann::json NiahPromptRecord(const Evaluator::TaskGroup& group, size_t task, bool text,
                                const std::vector<Token>* decoded) {
  const NiahTask& t = group.tasks.at(task);
  const std::vector<Token>& answer = t.answers.at(0);
  nlohmann::json record = {
      {"length", group.length},
      {"depth", group.depths.at(task)},
      {"sample", group.sample.at(task)},
      {"in_length", group.in_length},
      {"distance", t.needles.at(0).distance()},
      {"prompt_ids", t.prompt},
      {"answer_ids", answer},
  };
  if (text) {
    record["prompt"] = ByteVocabText(t.prompt);
    record["answer"] = ByteVocabText(answer);
  }
  if (decoded != nullptr) {
    record["onset_answer_ids"] = *decoded;
    if (text) record["onset_answer"] = ByteVocabText(*decoded);
    record["onset_correct"] = ScoreNiahTask(t, {*decoded}) == 1.0;  // as niah/acc counts
  }
  return record;
}

}  // namespace onset::model
