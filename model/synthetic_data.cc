#include "model/synthetic_data.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace onset::model {

SyntheticData::SyntheticData(const DataConfig& config, int seq_len,
                             std::shared_ptr<const Background> background)
    : config_(config),
      vocab_(config.text_tokens()),
      max_distance_(config.resolved_max_distance(seq_len)),
      background_(background ? std::move(background)
                             : std::make_shared<const MarkovChain>(config)) {}

std::vector<Token> SyntheticData::RandomRecordTokens(int n, Rng* rng) const {
  std::vector<Token> out(n);
  for (Token& t : out) t = static_cast<Token>(rng->Below(vocab_.record_alphabet()));
  return out;
}

int SyntheticData::min_distance() const { return config_.key_len + config_.value_len + 1; }

int SyntheticData::MinNiahLength() const {
  // BOS, one background token, the record, one background token, <Q> key <A>.
  return 1 + 1 + (config_.key_len + config_.value_len + 2) + 1 + (config_.key_len + 2);
}

void SyntheticData::WriteRecord(const std::vector<Token>& key, const std::vector<Token>& value,
                                const RecordSpan& s, std::vector<Token>* tokens) const {
  std::vector<Token>& t = *tokens;
  const int k = config_.key_len;
  t[s.record_pos] = vocab_.key();
  std::copy(key.begin(), key.end(), t.begin() + s.record_pos + 1);
  t[s.record_pos + k + 1] = vocab_.val();
  std::copy(value.begin(), value.end(), t.begin() + s.value_pos);
  t[s.query_pos] = vocab_.qry();
  std::copy(key.begin(), key.end(), t.begin() + s.query_pos + 1);
  t[s.answer_pos] = vocab_.ans();
  // The answer after <A> is written only when it fits (a NIAH prompt ends at <A>).
  for (int i = 0; i < config_.value_len && s.answer_pos + 1 + i < static_cast<int>(t.size()); ++i)
    t[s.answer_pos + 1 + i] = value[i];
}

void SyntheticData::FillBackground(const std::vector<bool>& taken, std::vector<Token>* tokens,
                                   Rng* rng) const {
  background_->Fill(taken, tokens, rng);
}

Sequence SyntheticData::Sample(int length, Rng* rng) const {
  const int k = config_.key_len, m = config_.value_len;
  const int span = k + m + 2;  // both the record and the query with its answer
  Sequence seq;
  seq.tokens.assign(length, 0);
  seq.tokens[0] = vocab_.bos();
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
      std::vector<Token> key = RandomRecordTokens(k, rng);
      if (std::find(keys.begin(), keys.end(), key) != keys.end()) continue;  // keys are unique
      std::vector<Token> value = RandomRecordTokens(m, rng);
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
  s.prompt[0] = vocab_.bos();
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
  std::vector<Token> key = RandomRecordTokens(k, rng);
  s.answer = RandomRecordTokens(m, rng);
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
