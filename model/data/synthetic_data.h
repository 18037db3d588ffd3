// The built-in synthetic pretraining stream (docs/science.md,
// "Data that makes retrieval learnable"). Torch-free: sequences are plain token
// vectors; the trainer turns them into tensors.
//
// Layout of a record and its later query (k = data.key_len, m = data.value_len):
//
//   ... <K> k1..kk <V> v1..vm ... background ... <Q> k1..kk <A> v1..vm ...
//        ^record_pos   ^value_pos                  ^query_pos   ^answer_pos (the <A> token)
//
// or, with data.value_marker false, `<K> k1..kk v1..vm`: then the value's first token sits right
// after the key in the record, as the answer's first token is predicted right after the key
// (at <A>) in the query, so one attention hop that matches "the key just before me" finds it;
// with the marker the value is one position further from its key than <A> is.
//
// The record-to-query distance is answer_pos - value_pos: how far back the <A> position (which
// predicts v1) must look to copy v1. A single attention layer with window w can copy the value
// directly iff distance < w. The smallest possible distance (query right after the record) is
// k + m + 1; sampled distances are clamped into what fits the sequence.
//
// A query whose key no record of the sequence has (data.absent_queries) is answered by value_len
// <N> tokens:  ... <Q> k1..kk <A> <N>..<N> ...
//
// The markers <K> <V> <Q> <A> <N> and the sequence start are the vocabulary's specials (vocab.h);
// keys and values are drawn uniformly from its record alphabet. What fills the rest is the
// background (background.h): the Markov chain or a token file.
//
// Everything is deterministic (rng.h), so the same seeds give the same tokens on every machine.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "model/config/cell_config.h"
#include "model/config/vocab.h"
#include "model/data/background.h"
#include "model/data/rng.h"

namespace onset::model {

struct RecordSpan {
  int record_pos = 0;  // the <K> token
  int value_pos = 0;   // v1 in the record
  int query_pos = 0;   // the <Q> token
  int answer_pos = 0;  // the position that predicts v1: the <A> token (the key's last token
                       // without data.answer_marker); the answer v1..vm follows it
  int distance() const { return answer_pos - value_pos; }
};

struct Sequence {
  std::vector<Token> tokens;        // tokens[0] is the vocabulary's BOS
  std::vector<RecordSpan> records;  // in placement order
  std::vector<int> absent_queries;  // the <Q> positions of queries no record answers
};

class SyntheticData {
 public:
  // `background` null = the Markov chain of `config` (whatever data.background says: lengths
  // and layouts do not depend on it).
  SyntheticData(const DataConfig& config, int seq_len,
                std::shared_ptr<const Background> background = nullptr);

  // A sequence of `length` tokens: kBos, then background with on average
  // data.records_per_seq records and queries (Poisson), placed without overlap.
  Sequence Sample(int length, Rng* rng) const;

  const Vocab& vocab() const { return vocab_; }
  const DataConfig& config() const { return config_; }
  int key_len() const { return config_.key_len; }
  int value_len() const { return config_.value_len; }
  int min_distance() const;  // the smallest distance any placement can have: k + m + 1

  // `n` tokens drawn uniformly from the key alphabet (data.key_alphabet) or the value alphabet
  // (the vocabulary's record alphabet).
  std::vector<Token> RandomKey(int n, Rng* rng) const;
  std::vector<Token> RandomValue(int n, Rng* rng) const;
  int key_alphabet() const { return key_alphabet_; }

  // Fills every position not marked in `taken` with the background (niah_tasks.cc builds the
  // NIAH prompts with it).
  void FillBackground(const std::vector<bool>& taken, std::vector<Token>* tokens, Rng* rng) const;

 private:
  void WriteRecord(const std::vector<Token>& key, const std::vector<Token>& value,
                   const RecordSpan& span, std::vector<Token>* tokens) const;

  DataConfig config_;
  Vocab vocab_;
  int key_alphabet_;
  int max_distance_;
  std::shared_ptr<const Background> background_;
};

// Which tokens of `seq` are background (true) rather than a record (`<K> key [<V>] value`), a
// question (`<Q> key [<A>]`) or an answer (the value, or the <N> tokens of an absent key).
// BOS is not background. `data` is the config the sequence was sampled with.
std::vector<bool> BackgroundTokens(const Sequence& seq, const DataConfig& data);

// Which tokens of `seq` answer a query: a record's value after its question, or the <N> tokens
// of an absent key (train.answer_loss_weight weighs the targets that predict them).
std::vector<bool> AnswerTokens(const Sequence& seq, const DataConfig& data);

// Exact match of every value token; `predicted` may be longer than `answer`.
bool ExactMatch(const std::vector<Token>& predicted, const std::vector<Token>& answer);

// Deterministic stream of sequences of one length; sequence i depends only on (seed, i).
class SequenceStream {
 public:
  SequenceStream(const SyntheticData* data, uint64_t seed, int length)
      : data_(data), seed_(seed), length_(length) {}
  Sequence Next();
  int64_t position() const { return index_; }
  // Continues the stream at sequence `index` (a resumed run's data cursor).
  void Seek(int64_t index) { index_ = index; }

 private:
  const SyntheticData* data_;  // not owned
  uint64_t seed_;
  int length_;
  int64_t index_ = 0;
};

}  // namespace onset::model
