// The trainer's vocabulary: the text tokens, then six special tokens.
//
// Text tokens are ids 0..text_tokens-1. With the built-in Markov background they are the 256
// byte values; with a token-file background (data.background: file) they are the file's
// vocabulary (data.vocab_size: 256 for files written by `onset-train prepare`, 50257 for GPT-2
// tokenised files, 65 for a character-level one, ...). The specials follow the text tokens:
//
//   bos  start of every sequence    key  <K>: a record's key follows
//   val  <V>: the value follows     qry  <Q>: a query's key follows    ans  <A>: the answer follows
//   none <N>: the answer to a query whose key no record has (data.absent_queries)
//
// The embedding table is padded to a multiple of 8 rows so matrix shapes stay friendly to
// vectorised kernels. Padding rows are never produced by the data and the model learns to give
// them negligible probability. The constants below are the byte vocabulary's ids.
#pragma once

#include <cstdint>

namespace onset::model {

using Token = int32_t;

inline constexpr Token kNumByteTokens = 256;
inline constexpr int kNumSpecialTokens = 6;

constexpr int PaddedVocabSize(int text_tokens) {
  return (text_tokens + kNumSpecialTokens + 7) / 8 * 8;
}

class Vocab {
 public:
  constexpr explicit Vocab(int text_tokens = kNumByteTokens) : text_tokens_(text_tokens) {}

  constexpr int text_tokens() const { return text_tokens_; }
  constexpr Token bos() const { return text_tokens_; }
  constexpr Token key() const { return text_tokens_ + 1; }
  constexpr Token val() const { return text_tokens_ + 2; }
  constexpr Token qry() const { return text_tokens_ + 3; }
  constexpr Token ans() const { return text_tokens_ + 4; }
  constexpr Token none() const { return text_tokens_ + 5; }
  constexpr int size() const { return PaddedVocabSize(text_tokens_); }  // embedding rows
  constexpr bool IsText(Token t) const { return t >= 0 && t < text_tokens_; }
  // Record keys and values are drawn from the first min(256, text_tokens) ids.
  constexpr int record_alphabet() const {
    return text_tokens_ < kNumByteTokens ? text_tokens_ : kNumByteTokens;
  }

 private:
  int text_tokens_;
};

// How tokens are written as text for the byte vocabulary (the NIAH prompts of `onset-train
// niah-prompts`, the Hugging Face tokenizer of python/onset/tokenization_onset.py): byte b as
// the character U+0000 + b, the specials by these names in id order, and the padding rows as
// ⟨PAD0⟩, ⟨PAD1⟩, ... The brackets are U+27E8 and U+27E9, characters no byte is, so a text of
// bytes never holds a name and every text reads back as exactly one sequence of ids.
inline constexpr const char* kSpecialTokenNames[kNumSpecialTokens] = {
    "\u27e8BOS\u27e9", "\u27e8K\u27e9", "\u27e8V\u27e9",
    "\u27e8Q\u27e9",   "\u27e8A\u27e9", "\u27e8N\u27e9"};

inline constexpr Vocab kByteVocab{};
inline constexpr Token kBos = kByteVocab.bos();         // 256
inline constexpr Token kKey = kByteVocab.key();         // 257
inline constexpr Token kVal = kByteVocab.val();         // 258
inline constexpr Token kQry = kByteVocab.qry();         // 259
inline constexpr Token kAns = kByteVocab.ans();         // 260
inline constexpr Token kNone = kByteVocab.none();       // 261
inline constexpr Token kVocabSize = kByteVocab.size();  // 264

static_assert(kVocabSize == 264 && kAns == 260);

inline constexpr bool IsByteToken(Token t) { return t >= 0 && t < kNumByteTokens; }

}  // namespace onset::model
