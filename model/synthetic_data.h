// The built-in synthetic pretraining stream and its needle-in-a-haystack probes (SCIENCE.md,
// "Data that makes retrieval learnable at small scale"). Torch-free: sequences are plain token
// vectors; the trainer turns them into tensors.
//
// Layout of a record and its later query (k = data.key_len, m = data.value_len):
//
//   ... <K> k1..kk <V> v1..vm ... background ... <Q> k1..kk <A> v1..vm ...
//        ^record_pos   ^value_pos                  ^query_pos   ^answer_pos (the <A> token)
//
// The record-to-query distance is answer_pos - value_pos: how far back the <A> position (which
// predicts v1) must look to copy v1. A single attention layer with window w can copy the value
// directly iff distance < w. The smallest possible distance (query right after the record) is
// k + m + 1; sampled distances are clamped into what fits the sequence.
//
// Everything is deterministic: a splitmix64 generator and hand-written samplers (std::
// distributions differ between standard libraries), so the same seeds give the same tokens on
// every machine.
#pragma once

#include <cstdint>
#include <vector>

#include "model/cell_config.h"
#include "model/vocab.h"

namespace onset::model {

// splitmix64: small, fast, and good enough for data generation.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t Next();
  double Uniform();             // [0, 1)
  int64_t Below(int64_t n);     // [0, n), n > 0
  double Gaussian();            // standard normal
  int Poisson(double mean);     // mean >= 0

 private:
  uint64_t state_;
};

// Combines seeds and stream tags into a new seed (order matters).
uint64_t MixSeed(uint64_t a, uint64_t b);

// Stream tags: the same data.seed / train.seed never produce overlapping streams.
inline constexpr uint64_t kChainStream = 0x636861696eULL;     // the background chain
inline constexpr uint64_t kTrainStream = 0x747261696eULL;     // training sequences
inline constexpr uint64_t kHeldoutStream = 0x68656c64ULL;     // held-out sequences
inline constexpr uint64_t kNiahStream = 0x6e696168ULL;        // NIAH samples
inline constexpr uint64_t kAblationStream = 0x61626c74ULL;    // random heads of the ablation

// A fixed random sparse Markov chain over the byte tokens: each token has
// data.markov_branching successors drawn (without replacement) from a Zipf(data.zipf_exponent)
// distribution over a random ranking of the bytes, so the marginals are Zipf-like.
class MarkovChain {
 public:
  MarkovChain(int branching, double zipf_exponent, uint64_t seed);

  Token Start(Rng* rng) const;              // a first token, drawn from the Zipf marginal
  Token Next(Token prev, Rng* rng) const;   // prev must be a byte token
  const std::vector<Token>& Successors(Token prev) const { return successors_[prev]; }

 private:
  std::vector<double> start_cdf_;
  std::vector<std::vector<Token>> successors_;  // [256][branching]
  std::vector<std::vector<double>> cdf_;        // [256][branching], last entry 1
};

struct RecordSpan {
  int record_pos = 0;  // the <K> token
  int value_pos = 0;   // v1 in the record
  int query_pos = 0;   // the <Q> token
  int answer_pos = 0;  // the <A> token; the answer v1..vm follows it
  int distance() const { return answer_pos - value_pos; }
};

struct Sequence {
  std::vector<Token> tokens;         // tokens[0] == kBos
  std::vector<RecordSpan> records;   // in placement order
};

// One needle-in-a-haystack probe: `prompt` has exactly the requested length and ends with
// `<Q> key <A>`; the model must continue it with `answer`.
struct NiahSample {
  std::vector<Token> prompt;
  std::vector<Token> answer;   // data.value_len tokens
  RecordSpan needle;           // answer_pos == prompt.size() - 1
};

class SyntheticData {
 public:
  explicit SyntheticData(const DataConfig& config, int seq_len);

  // A sequence of `length` tokens: kBos, then background with on average
  // data.records_per_seq records and queries (Poisson), placed without overlap.
  Sequence Sample(int length, Rng* rng) const;

  // A NIAH prompt of `length` tokens with one record whose <K> sits at relative depth `depth`
  // (0 = right after kBos, 1 = right before the query). Requires length >= MinNiahLength().
  NiahSample Niah(int length, double depth, Rng* rng) const;
  int MinNiahLength() const;

  const MarkovChain& chain() const { return chain_; }
  int key_len() const { return config_.key_len; }
  int value_len() const { return config_.value_len; }
  int min_distance() const;  // the smallest distance any placement can have: k + m + 1

  // Fills every position not marked in `taken` with the background chain (niah_tasks.cc
  // builds its prompts with it too).
  void FillBackground(const std::vector<bool>& taken, std::vector<Token>* tokens, Rng* rng) const;

 private:
  void WriteRecord(const std::vector<Token>& key, const std::vector<Token>& value,
                   const RecordSpan& span, std::vector<Token>* tokens) const;

  DataConfig config_;
  int max_distance_;
  MarkovChain chain_;
};

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
