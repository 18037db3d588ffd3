// The background text around the synthetic records (docs/science.md, "Data that makes
// retrieval learnable"): what fills every position of a training sequence or NIAH prompt
// that is not part of a record or query. Torch-free.
//
//   markov  (data.background: markov, the default) a fixed random sparse Markov chain over the
//           byte tokens with Zipf-like marginals, continued across records.
//   file    (data.background: file) consecutive tokens of a token file (token_file.h) from a
//           random offset: real text, with the records spliced in. Training reads the file's
//           training part, evaluation its held-out part (data.heldout_path, or the last
//           data.heldout_fraction of data.path), so no evaluation prompt is text the model
//           trained on.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "model/config/cell_config.h"
#include "model/config/vocab.h"
#include "model/data/rng.h"
#include "model/data/token_file.h"

namespace onset::model {

class Background {
 public:
  virtual ~Background() = default;
  // Writes a token into every position of `tokens` not marked in `taken`, in order.
  virtual void Fill(const std::vector<bool>& taken, std::vector<Token>* tokens, Rng* rng) const = 0;
};

// A fixed random sparse Markov chain over the byte tokens: each token has
// data.markov_branching successors drawn (without replacement) from a Zipf(data.zipf_exponent)
// distribution over a random ranking of the bytes, so the marginals are Zipf-like.
class MarkovChain : public Background {
 public:
  MarkovChain(int branching, double zipf_exponent, uint64_t seed);
  // The chain of data.markov_branching, data.zipf_exponent and data.seed.
  explicit MarkovChain(const DataConfig& config);

  Token Start(Rng* rng) const;             // a first token, drawn from the Zipf marginal
  Token Next(Token prev, Rng* rng) const;  // prev must be a byte token
  const std::vector<Token>& Successors(Token prev) const { return successors_[prev]; }

  // The chain continues across records: the token after a record depends on the last
  // background token before it.
  void Fill(const std::vector<bool>& taken, std::vector<Token>* tokens, Rng* rng) const override;

 private:
  std::vector<double> start_cdf_;
  std::vector<std::vector<Token>> successors_;  // [256][branching]
  std::vector<std::vector<double>> cdf_;        // [256][branching], last entry 1
};

// Tokens [begin, end) of a token file. Fill copies consecutive tokens from a uniformly drawn
// start; the part must hold at least as many tokens as any sequence it fills.
class FileBackground : public Background {
 public:
  FileBackground(std::shared_ptr<const TokenFile> file, int64_t begin, int64_t end);
  void Fill(const std::vector<bool>& taken, std::vector<Token>* tokens, Rng* rng) const override;
  int64_t size() const { return end_ - begin_; }

 private:
  std::shared_ptr<const TokenFile> file_;
  int64_t begin_, end_;
};

// The backgrounds of one cell: one for training sequences, one for held-out sequences and NIAH
// prompts (the same chain for markov).
struct Backgrounds {
  std::shared_ptr<const Background> train;
  std::shared_ptr<const Background> heldout;
};

// Builds the backgrounds of `data`. `train_len` and `heldout_len` are the longest sequences
// each will fill. Returns nullopt and sets *error ("data.KEY: PATH: what") when a file cannot
// be used: missing, damaged, an id outside data.vocab_size, or a part too short.
std::optional<Backgrounds> OpenBackgrounds(const DataConfig& data, int64_t train_len,
                                           int64_t heldout_len, std::string* error);

// The backgrounds a cell's trainer uses: training sequences of seq_len + 1 tokens; held-out
// sequences of as many and NIAH prompts of the longest eval length. Errors as OpenBackgrounds.
std::optional<Backgrounds> OpenCellBackgrounds(const CellConfig& config, std::string* error);

}  // namespace onset::model
