#include "model/data/background.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

namespace onset::model {
namespace {

// Index of the first cdf entry above u (cdf ends with 1).
int SampleCdf(const std::vector<double>& cdf, double u) {
  auto it = std::upper_bound(cdf.begin(), cdf.end(), u);
  return static_cast<int>(std::min<std::ptrdiff_t>(it - cdf.begin(), cdf.size() - 1));
}

std::vector<double> ToCdf(std::vector<double> weights) {
  double total = std::accumulate(weights.begin(), weights.end(), 0.0);
  double acc = 0;
  for (double& w : weights) {
    acc += w / total;
    w = acc;
  }
  weights.back() = 1.0;
  return weights;
}

}  // namespace

MarkovChain::MarkovChain(int branching, double zipf_exponent, uint64_t seed) {
  Rng rng(seed);
  branching = std::clamp(branching, 1, static_cast<int>(kNumByteTokens));
  // A random ranking of the bytes; rank r gets Zipf weight 1 / (r + 1)^s.
  std::vector<Token> order(kNumByteTokens);
  std::iota(order.begin(), order.end(), 0);
  for (int i = kNumByteTokens - 1; i > 0; --i) std::swap(order[i], order[rng.Below(i + 1)]);
  std::vector<double> weight(kNumByteTokens);
  for (int r = 0; r < kNumByteTokens; ++r) weight[order[r]] = std::pow(r + 1.0, -zipf_exponent);
  start_cdf_ = ToCdf(weight);

  successors_.resize(kNumByteTokens);
  cdf_.resize(kNumByteTokens);
  for (Token a = 0; a < kNumByteTokens; ++a) {
    // Successors: weighted sampling without replacement (Efraimidis-Spirakis keys).
    std::vector<std::pair<double, Token>> keyed(kNumByteTokens);
    for (Token b = 0; b < kNumByteTokens; ++b) {
      keyed[b] = {std::log(1.0 - rng.Uniform()) / weight[b], b};
    }
    std::partial_sort(keyed.begin(), keyed.begin() + branching, keyed.end(),
                      [](const auto& x, const auto& y) { return x.first > y.first; });
    std::vector<double> probs;
    for (int i = 0; i < branching; ++i) {
      Token b = keyed[i].second;
      successors_[a].push_back(b);
      probs.push_back(weight[b] * (0.5 + rng.Uniform()));  // per-token variety
    }
    cdf_[a] = ToCdf(probs);
  }
}

MarkovChain::MarkovChain(const DataConfig& config)
    : MarkovChain(config.markov_branching, config.zipf_exponent,
                  MixSeed(static_cast<uint64_t>(config.seed), kChainStream)) {}

Token MarkovChain::Start(Rng* rng) const {
  return static_cast<Token>(SampleCdf(start_cdf_, rng->Uniform()));
}

Token MarkovChain::Next(Token prev, Rng* rng) const {
  return successors_[prev][SampleCdf(cdf_[prev], rng->Uniform())];
}

void MarkovChain::Fill(const std::vector<bool>& taken, std::vector<Token>* tokens, Rng* rng) const {
  Token prev = -1;
  for (size_t i = 0; i < tokens->size(); ++i) {
    if (taken[i]) continue;
    prev = prev < 0 ? Start(rng) : Next(prev, rng);
    (*tokens)[i] = prev;
  }
}

FileBackground::FileBackground(std::shared_ptr<const TokenFile> file, int64_t begin, int64_t end)
    : file_(std::move(file)), begin_(begin), end_(end) {}

void FileBackground::Fill(const std::vector<bool>& taken, std::vector<Token>* tokens,
                          Rng* rng) const {
  const int64_t free = std::count(taken.begin(), taken.end(), false);
  if (free > size()) {
    throw std::logic_error(file_->path() + ": a part of " + std::to_string(size()) +
                           " tokens cannot fill " + std::to_string(free) + " positions");
  }
  int64_t at = begin_ + rng->Below(size() - free + 1);
  for (size_t i = 0; i < tokens->size(); ++i) {
    if (!taken[i]) (*tokens)[i] = file_->at(at++);
  }
}

std::optional<Backgrounds> OpenBackgrounds(const DataConfig& data, int64_t train_len,
                                           int64_t heldout_len, std::string* error) {
  if (data.background != kBackgroundFile) {
    auto chain = std::make_shared<const MarkovChain>(data);
    return Backgrounds{chain, chain};
  }
  const TokenDtype dtype = ParseTokenDtype(data.dtype).value_or(TokenDtype::kUint16);
  std::string why;
  std::shared_ptr<const TokenFile> file = TokenFile::Open(data.path, dtype, data.vocab_size, &why);
  if (!file) {
    *error = "data.path: " + why;
    return std::nullopt;
  }
  auto too_short = [](const std::string& what, int64_t have, int64_t need) {
    return what + " has " + std::to_string(have) + " tokens, fewer than the " +
           std::to_string(need) + " of the longest sequence it must fill";
  };
  Backgrounds out;
  if (!data.heldout_path.empty()) {
    std::shared_ptr<const TokenFile> heldout =
        TokenFile::Open(data.heldout_path, dtype, data.vocab_size, &why);
    if (!heldout) {
      *error = "data.heldout_path: " + why;
      return std::nullopt;
    }
    if (file->size() < train_len) {
      *error = "data.path: " + too_short(data.path, file->size(), train_len);
      return std::nullopt;
    }
    if (heldout->size() < heldout_len) {
      *error = "data.heldout_path: " + too_short(data.heldout_path, heldout->size(), heldout_len);
      return std::nullopt;
    }
    out.train = std::make_shared<const FileBackground>(file, 0, file->size());
    out.heldout = std::make_shared<const FileBackground>(heldout, 0, heldout->size());
    return out;
  }
  const int64_t n = file->size();
  const int64_t held =
      static_cast<int64_t>(std::ceil(static_cast<double>(n) * data.heldout_fraction));
  if (held < heldout_len) {
    *error = "data.heldout_fraction: " +
             too_short("the held-out part (the last " + std::to_string(data.heldout_fraction) +
                           ") of " + data.path,
                       held, heldout_len) +
             "; raise data.heldout_fraction or give data.heldout_path";
    return std::nullopt;
  }
  if (n - held < train_len) {
    *error = "data.path: " + too_short("the training part of " + data.path, n - held, train_len);
    return std::nullopt;
  }
  out.train = std::make_shared<const FileBackground>(file, 0, n - held);
  out.heldout = std::make_shared<const FileBackground>(file, n - held, n);
  return out;
}

std::optional<Backgrounds> OpenCellBackgrounds(const CellConfig& config, std::string* error) {
  const int train_len = config.model.seq_len + 1;
  int heldout_len = config.eval.heldout_seqs > 0 ? train_len : 0;
  if (config.eval.niah_samples > 0 && !config.eval.niah_depths.empty()) {
    for (int length : config.eval.resolved_niah_lengths(config.model.seq_len)) {
      heldout_len = std::max(heldout_len, length);
    }
  }
  return OpenBackgrounds(config.data, train_len, heldout_len, error);
}

}  // namespace onset::model
