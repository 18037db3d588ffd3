#include "model/niah_tasks.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace onset::model {
namespace {

std::vector<Token> Question(const Vocab& vocab, const std::vector<Token>& key) {
  std::vector<Token> q = {vocab.qry()};
  q.insert(q.end(), key.begin(), key.end());
  q.push_back(vocab.ans());
  return q;
}

int Records(NiahVariant v) { return v == NiahVariant::kSingle ? 1 : kVariantRecords; }

}  // namespace

NiahVariant ParseNiahVariant(const std::string& name) {
  if (name == "single") return NiahVariant::kSingle;
  if (name == "multi-key") return NiahVariant::kMultiKey;
  if (name == "multi-value") return NiahVariant::kMultiValue;
  if (name == "multi-query") return NiahVariant::kMultiQuery;
  throw std::invalid_argument("unknown NIAH variant '" + name + "'");
}

int MinNiahTaskLength(const SyntheticData& data, NiahVariant variant) {
  const int k = data.key_len(), span = k + data.value_len() + 2, n = Records(variant);
  // BOS, the needle, one background token, the question; with more records, enough free
  // room that the stretches beside the needle hold n - 1 records wherever the needle sits.
  return 1 + span + (n > 1 ? (n + 1) * span - 2 : 0) + 1 + (k + 2);
}

NiahTask MakeNiahTask(const SyntheticData& data, NiahVariant variant, int length, double depth,
                      Rng* rng) {
  if (length < MinNiahTaskLength(data, variant)) {
    throw std::invalid_argument("NIAH task length " + std::to_string(length) +
                                " is below the minimum " +
                                std::to_string(MinNiahTaskLength(data, variant)));
  }
  const int k = data.key_len(), m = data.value_len(), span = k + m + 2;
  NiahTask t;
  t.variant = variant;
  t.prompt.assign(length, 0);
  t.prompt[0] = data.vocab().bos();
  std::vector<bool> taken(length, false);
  taken[0] = true;
  const int query_pos = length - k - 2;
  for (int i = query_pos; i < length; ++i) taken[i] = true;
  const int last = query_pos - 1 - span;  // the last record start leaving a background token

  // Keys and values: distinct keys except for multi-value, distinct values there.
  const int n = Records(variant);
  std::vector<std::vector<Token>> keys, values;
  while (static_cast<int>(keys.size()) < n) {
    std::vector<Token> key = variant == NiahVariant::kMultiValue && !keys.empty()
                                 ? keys[0]
                                 : data.RandomRecordTokens(k, rng);
    std::vector<Token> value = data.RandomRecordTokens(m, rng);
    const bool dup_key = variant != NiahVariant::kMultiValue &&
                         std::find(keys.begin(), keys.end(), key) != keys.end();
    const bool dup_value = std::find(values.begin(), values.end(), value) != values.end();
    if (dup_key || dup_value) continue;
    keys.push_back(std::move(key));
    values.push_back(std::move(value));
  }

  auto place = [&](int pos, int r) {
    for (int i = 0; i < span; ++i) taken[pos + i] = true;
    t.prompt[pos] = data.vocab().key();
    std::copy(keys[r].begin(), keys[r].end(), t.prompt.begin() + pos + 1);
    t.prompt[pos + k + 1] = data.vocab().val();
    std::copy(values[r].begin(), values[r].end(), t.prompt.begin() + pos + k + 2);
    RecordSpan s;
    s.record_pos = pos;
    s.value_pos = pos + k + 2;
    s.query_pos = query_pos;
    s.answer_pos = length - 1;
    return s;
  };
  std::vector<RecordSpan> spans;
  spans.push_back(
      place(1 + static_cast<int>(std::lround(std::clamp(depth, 0.0, 1.0) * (last - 1))), 0));
  // The others go into the free stretches left and right of the needle: each stretch gets
  // as many as it can hold (at random, subject to capacity), spread by random gaps.
  const int needle = spans[0].record_pos;
  const int seg_begin[2] = {1, needle + span};
  const int seg_len[2] = {needle - 1, last + span - 1 - (needle + span) + 1};
  int room[2] = {std::max(0, seg_len[0]) / span, std::max(0, seg_len[1]) / span};
  if (room[0] + room[1] < n - 1) {
    throw std::invalid_argument("NIAH task: no room for " + std::to_string(n) +
                                " records in length " + std::to_string(length));
  }
  int count[2] = {0, 0};
  for (int r = 1; r < n; ++r) {
    int side = static_cast<int>(rng->Below(2));
    if (count[side] == room[side]) side = 1 - side;
    ++count[side];
  }
  int r = 1;
  for (int side = 0; side < 2; ++side) {
    const int slack = seg_len[side] - count[side] * span;
    std::vector<int> offsets(count[side]);  // sorted gaps' cumulative sizes in [0, slack]
    for (int& o : offsets) o = static_cast<int>(rng->Below(slack + 1));
    std::sort(offsets.begin(), offsets.end());
    for (int i = 0; i < count[side]; ++i) {
      spans.push_back(place(seg_begin[side] + offsets[i] + i * span, r++));
    }
  }
  std::vector<Token> first = Question(data.vocab(), keys[0]);
  std::copy(first.begin(), first.end(), t.prompt.begin() + query_pos);
  data.FillBackground(taken, &t.prompt, rng);

  switch (variant) {
    case NiahVariant::kSingle:
    case NiahVariant::kMultiKey:
      t.needles = {spans[0]};
      t.distractors.assign(spans.begin() + 1, spans.end());
      t.answers = {values[0]};
      break;
    case NiahVariant::kMultiValue:
      t.needles = spans;
      t.answers = values;
      for (int r = 1; r < n; ++r) t.suffixes.push_back(first);
      break;
    case NiahVariant::kMultiQuery:
      t.needles = spans;
      t.answers = values;
      for (int r = 1; r < n; ++r) t.suffixes.push_back(Question(data.vocab(), keys[r]));
      break;
  }
  return t;
}

double ScoreNiahTask(const NiahTask& task, const std::vector<std::vector<Token>>& decoded) {
  const int rounds = task.rounds();
  if (static_cast<int>(decoded.size()) != rounds) {
    throw std::invalid_argument("NIAH task: decoded rounds differ from the task's");
  }
  if (task.variant == NiahVariant::kMultiValue) {
    int recovered = 0;
    for (const auto& value : task.answers) {
      recovered += std::any_of(decoded.begin(), decoded.end(),
                               [&](const std::vector<Token>& d) { return ExactMatch(d, value); });
    }
    return static_cast<double>(recovered) / rounds;
  }
  int right = 0;
  for (int r = 0; r < rounds; ++r) right += ExactMatch(decoded[r], task.answers[r]);
  return static_cast<double>(right) / rounds;
}

}  // namespace onset::model
