#include "model/synthetic_data.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <string>

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

std::vector<Token> RandomBytes(int n, Rng* rng) {
  std::vector<Token> out(n);
  for (Token& t : out) t = static_cast<Token>(rng->Below(kNumByteTokens));
  return out;
}

}  // namespace

uint64_t Rng::Next() {
  uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

double Rng::Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }

int64_t Rng::Below(int64_t n) { return static_cast<int64_t>(Uniform() * static_cast<double>(n)); }

double Rng::Gaussian() {
  double u1 = 1.0 - Uniform();  // (0, 1]
  double u2 = Uniform();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
}

int Rng::Poisson(double mean) {
  if (mean <= 0) return 0;
  if (mean > 30) {  // normal approximation; Knuth's product underflows for large means
    return std::max(0, static_cast<int>(std::lround(mean + std::sqrt(mean) * Gaussian())));
  }
  double limit = std::exp(-mean), p = 1.0;
  int k = -1;
  do {
    ++k;
    p *= Uniform();
  } while (p > limit);
  return k;
}

uint64_t MixSeed(uint64_t a, uint64_t b) {
  Rng r(a * 0x9e3779b97f4a7c15ULL ^ (b + 0x632be59bd9b4e019ULL));
  r.Next();
  return r.Next();
}

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

Token MarkovChain::Start(Rng* rng) const {
  return static_cast<Token>(SampleCdf(start_cdf_, rng->Uniform()));
}

Token MarkovChain::Next(Token prev, Rng* rng) const {
  return successors_[prev][SampleCdf(cdf_[prev], rng->Uniform())];
}

SyntheticData::SyntheticData(const DataConfig& config, int seq_len)
    : config_(config),
      max_distance_(config.resolved_max_distance(seq_len)),
      chain_(config.markov_branching, config.zipf_exponent,
             MixSeed(static_cast<uint64_t>(config.seed), kChainStream)) {}

int SyntheticData::min_distance() const { return config_.key_len + config_.value_len + 1; }

int SyntheticData::MinNiahLength() const {
  // kBos, one background token, the record, one background token, <Q> key <A>.
  return 1 + 1 + (config_.key_len + config_.value_len + 2) + 1 + (config_.key_len + 2);
}

void SyntheticData::WriteRecord(const std::vector<Token>& key, const std::vector<Token>& value,
                                const RecordSpan& s, std::vector<Token>* tokens) const {
  std::vector<Token>& t = *tokens;
  const int k = config_.key_len;
  t[s.record_pos] = kKey;
  std::copy(key.begin(), key.end(), t.begin() + s.record_pos + 1);
  t[s.record_pos + k + 1] = kVal;
  std::copy(value.begin(), value.end(), t.begin() + s.value_pos);
  t[s.query_pos] = kQry;
  std::copy(key.begin(), key.end(), t.begin() + s.query_pos + 1);
  t[s.answer_pos] = kAns;
  // The answer after <A> is written only when it fits (a NIAH prompt ends at <A>).
  for (int i = 0; i < config_.value_len && s.answer_pos + 1 + i < static_cast<int>(t.size()); ++i)
    t[s.answer_pos + 1 + i] = value[i];
}

void SyntheticData::FillBackground(const std::vector<bool>& taken, std::vector<Token>* tokens,
                                   Rng* rng) const {
  // The chain continues across records, so the token after a record depends on the last
  // background token before it.
  Token prev = -1;
  for (size_t i = 0; i < tokens->size(); ++i) {
    if (taken[i]) continue;
    prev = prev < 0 ? chain_.Start(rng) : chain_.Next(prev, rng);
    (*tokens)[i] = prev;
  }
}

Sequence SyntheticData::Sample(int length, Rng* rng) const {
  const int k = config_.key_len, m = config_.value_len;
  const int span = k + m + 2;  // both the record and the query with its answer
  Sequence seq;
  seq.tokens.assign(length, 0);
  seq.tokens[0] = kBos;
  std::vector<bool> taken(length, false);
  taken[0] = true;

  // Placement: p = record_pos >= 1, q = query_pos = p + d + 1, q + span <= length.
  const int d_fit = length - 2 - span - 1;  // the largest distance with p = 1
  const int d_lo = std::max(min_distance(), config_.min_distance);
  const int d_hi = std::min(max_distance_, d_fit);
  const int wanted = std::min(rng->Poisson(config_.records_per_seq), length / (2 * span));
  std::vector<std::vector<Token>> keys;
  for (int r = 0; r < wanted && d_fit >= min_distance(); ++r) {
    for (int attempt = 0; attempt < 16; ++attempt) {
      int d;
      if (d_lo >= d_hi) {
        d = std::max(min_distance(), std::min(d_lo, d_fit));
      } else {
        double lo = std::log(d_lo), hi = std::log(d_hi + 1.0);
        d = std::min(d_hi, static_cast<int>(std::exp(lo + (hi - lo) * rng->Uniform())));
      }
      const int p_max = length - span - d - 1;  // q + span <= length
      RecordSpan s;
      s.record_pos = 1 + static_cast<int>(rng->Below(p_max));
      s.value_pos = s.record_pos + k + 2;
      s.query_pos = s.record_pos + d + 1;
      s.answer_pos = s.query_pos + k + 1;
      bool free = true;
      for (int i = 0; i < span && free; ++i) free = !taken[s.record_pos + i] && !taken[s.query_pos + i];
      if (!free) continue;
      std::vector<Token> key = RandomBytes(k, rng);
      if (std::find(keys.begin(), keys.end(), key) != keys.end()) continue;  // keys are unique
      std::vector<Token> value = RandomBytes(m, rng);
      for (int i = 0; i < span; ++i) taken[s.record_pos + i] = taken[s.query_pos + i] = true;
      WriteRecord(key, value, s, &seq.tokens);
      keys.push_back(std::move(key));
      seq.records.push_back(s);
      break;
    }
  }
  FillBackground(taken, &seq.tokens, rng);
  return seq;
}

NiahSample SyntheticData::Niah(int length, double depth, Rng* rng) const {
  if (length < MinNiahLength()) {
    throw std::invalid_argument("NIAH length " + std::to_string(length) + " is below the minimum " +
                                std::to_string(MinNiahLength()));
  }
  const int k = config_.key_len, m = config_.value_len;
  NiahSample s;
  s.prompt.assign(length, 0);
  s.prompt[0] = kBos;
  RecordSpan& n = s.needle;
  n.query_pos = length - k - 2;
  n.answer_pos = length - 1;
  // <K> between position 1 and the last start that leaves one background token before <Q>.
  const int last = n.query_pos - 1 - (k + m + 2);
  n.record_pos = 1 + static_cast<int>(std::lround(std::clamp(depth, 0.0, 1.0) * (last - 1)));
  n.value_pos = n.record_pos + k + 2;
  std::vector<bool> taken(length, false);
  taken[0] = true;
  for (int i = 0; i < k + m + 2; ++i) taken[n.record_pos + i] = true;
  for (int i = n.query_pos; i < length; ++i) taken[i] = true;
  std::vector<Token> key = RandomBytes(k, rng);
  s.answer = RandomBytes(m, rng);
  WriteRecord(key, s.answer, n, &s.prompt);
  FillBackground(taken, &s.prompt, rng);
  return s;
}

bool ExactMatch(const std::vector<Token>& predicted, const std::vector<Token>& answer) {
  if (predicted.size() < answer.size()) return false;
  return std::equal(answer.begin(), answer.end(), predicted.begin());
}

Sequence SequenceStream::Next() {
  Rng rng(MixSeed(seed_, static_cast<uint64_t>(index_++)));
  return data_->Sample(length_, &rng);
}

}  // namespace onset::model
