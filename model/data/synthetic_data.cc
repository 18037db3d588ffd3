#include "model/data/synthetic_data.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace onset::model {

SyntheticData::SyntheticData(const DataConfig& config, int seq_len,
                             std::shared_ptr<const Background> background)
    : config_(config),
      vocab_(config.text_tokens()),
      key_alphabet_(config.resolved_key_alphabet()),
      max_distance_(config.resolved_max_distance(seq_len)),
      background_(background ? std::move(background)
                             : std::make_shared<const MarkovChain>(config)) {}

std::vector<Token> SyntheticData::RandomKey(int n, Rng* rng) const {
  std::vector<Token> out(n);
  for (Token& t : out) t = static_cast<Token>(rng->Below(key_alphabet_));
  return out;
}

std::vector<Token> SyntheticData::RandomValue(int n, Rng* rng) const {
  std::vector<Token> out(n);
  for (Token& t : out) t = static_cast<Token>(rng->Below(vocab_.record_alphabet()));
  return out;
}

int SyntheticData::min_distance() const {
  return config_.key_len + config_.value_len + (config_.answer_marker ? 1 : 0);
}

void SyntheticData::WriteRecord(const std::vector<Token>& key, const std::vector<Token>& value,
                                const RecordSpan& s, std::vector<Token>* tokens) const {
  std::vector<Token>& t = *tokens;
  const int k = config_.key_len;
  t[s.record_pos] = vocab_.key();
  std::copy(key.begin(), key.end(), t.begin() + s.record_pos + 1);
  if (config_.value_marker) t[s.record_pos + k + 1] = vocab_.val();
  std::copy(value.begin(), value.end(), t.begin() + s.value_pos);
  t[s.query_pos] = vocab_.qry();
  std::copy(key.begin(), key.end(), t.begin() + s.query_pos + 1);
  if (config_.answer_marker) t[s.answer_pos] = vocab_.ans();
  // The answer is written only when it fits (a NIAH prompt ends with the question).
  for (int i = 0; i < config_.value_len && s.answer_pos + 1 + i < static_cast<int>(t.size()); ++i)
    t[s.answer_pos + 1 + i] = value[i];
}

void SyntheticData::FillBackground(const std::vector<bool>& taken, std::vector<Token>* tokens,
                                   Rng* rng) const {
  background_->Fill(taken, tokens, rng);
}

Sequence SyntheticData::Sample(int length, Rng* rng) const {
  const int k = config_.key_len, m = config_.value_len;
  const int rspan = config_.record_len();
  const int qspan = config_.question_len() + m;  // <Q> key [<A>] answer
  const int a = config_.answer_marker ? 1 : 0;
  Sequence seq;
  seq.tokens.assign(length, 0);
  seq.tokens[0] = vocab_.bos();
  std::vector<bool> taken(length, false);
  taken[0] = true;

  // Placement: p = record_pos >= 1, distance d = answer_pos - value_pos, so the query starts
  // at q = value_pos + d - k - a (>= p + rspan exactly when d >= min_distance()), and
  // q + qspan <= length, i.e. p <= length - rspan - d - 1.
  const int d_fit = length - rspan - 3;  // the largest distance with p = 1, and slack
  const int d_lo = std::max(min_distance(), config_.min_distance);
  const int d_hi = std::min(max_distance_, d_fit);
  const int wanted = std::min(rng->Poisson(config_.records_per_seq), length / (rspan + qspan));
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
      const int p_max = length - rspan - d - 1;  // q + qspan <= length
      RecordSpan s;
      s.record_pos = 1 + static_cast<int>(rng->Below(p_max));
      s.value_pos = s.record_pos + rspan - m;
      s.query_pos = s.value_pos + d - k - a;
      s.answer_pos = s.query_pos + k + a;
      bool free = true;
      for (int i = 0; i < rspan && free; ++i) free = !taken[s.record_pos + i];
      for (int i = 0; i < qspan && free; ++i) free = !taken[s.query_pos + i];
      if (!free) continue;
      std::vector<Token> key = RandomKey(k, rng);
      if (std::find(keys.begin(), keys.end(), key) != keys.end()) continue;  // keys are unique
      std::vector<Token> value = RandomValue(m, rng);
      for (int i = 0; i < rspan; ++i) taken[s.record_pos + i] = true;
      for (int i = 0; i < qspan; ++i) taken[s.query_pos + i] = true;
      WriteRecord(key, value, s, &seq.tokens);
      keys.push_back(std::move(key));
      seq.records.push_back(s);
      break;
    }
    // A query asking a key no record of the sequence has (keys stay unique, so no later record
    // takes it either), anywhere it fits; answered by <N> tokens.
    if (config_.absent_queries > 0 && rng->Uniform() < config_.absent_queries) {
      for (int attempt = 0; attempt < 16; ++attempt) {
        const int q = 1 + static_cast<int>(rng->Below(length - qspan));
        bool free = true;
        for (int i = 0; i < qspan && free; ++i) free = !taken[q + i];
        if (!free) continue;
        std::vector<Token> key = RandomKey(k, rng);
        if (std::find(keys.begin(), keys.end(), key) != keys.end()) continue;
        for (int i = 0; i < qspan; ++i) taken[q + i] = true;
        seq.tokens[q] = vocab_.qry();
        std::copy(key.begin(), key.end(), seq.tokens.begin() + q + 1);
        if (a) seq.tokens[q + k + 1] = vocab_.ans();
        std::fill_n(seq.tokens.begin() + q + k + 1 + a, m, vocab_.none());
        seq.absent_queries.push_back(q);
        keys.push_back(std::move(key));
        break;
      }
    }
  }
  FillBackground(taken, &seq.tokens, rng);
  return seq;
}

std::vector<bool> BackgroundTokens(const Sequence& seq, const DataConfig& data) {
  const int n = static_cast<int>(seq.tokens.size());
  std::vector<bool> background(n, true);
  auto clear = [&](int from, int count) {
    for (int i = std::max(0, from); i < std::min(n, from + count); ++i) background[i] = false;
  };
  if (n > 0) background[0] = false;  // BOS
  const int question = data.question_len(), answer = data.value_len;
  for (const RecordSpan& r : seq.records) {
    clear(r.record_pos, data.record_len());
    clear(r.query_pos, question + answer);
  }
  for (int q : seq.absent_queries) clear(q, question + answer);
  return background;
}

std::vector<bool> AnswerTokens(const Sequence& seq, const DataConfig& data) {
  const int n = static_cast<int>(seq.tokens.size());
  std::vector<bool> answer(n, false);
  auto mark = [&](int from) {
    for (int i = std::max(0, from); i < std::min(n, from + data.value_len); ++i) answer[i] = true;
  };
  for (const RecordSpan& r : seq.records) mark(r.answer_pos + 1);
  for (int q : seq.absent_queries) mark(q + data.question_len());
  return answer;
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
