#include "model/evaluation/niah_tasks.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace onset::model {
namespace {

std::vector<Token> Question(const SyntheticData& data, const std::vector<Token>& key) {
  std::vector<Token> q = {data.vocab().qry()};
  q.insert(q.end(), key.begin(), key.end());
  if (data.config().answer_marker) q.push_back(data.vocab().ans());
  return q;
}

int Records(NiahVariant v, int records) { return v == NiahVariant::kSingle ? 1 : records; }

bool Contains(const std::vector<std::vector<Token>>& set, const std::vector<Token>& x) {
  return std::find(set.begin(), set.end(), x) != set.end();
}

// `n` distinct random keys (or values) of length `len`, none in `avoid`.
std::vector<std::vector<Token>> Distinct(const SyntheticData& data, bool keys, int n, int len,
                                         const std::vector<std::vector<Token>>& avoid, Rng* rng) {
  const int alphabet = keys ? data.key_alphabet() : data.vocab().record_alphabet();
  if (std::pow(static_cast<double>(alphabet), len) < n + static_cast<double>(avoid.size())) {
    throw std::invalid_argument("NIAH task: an alphabet of " + std::to_string(alphabet) +
                                " cannot give " + std::to_string(n + avoid.size()) +
                                " distinct strings of length " + std::to_string(len));
  }
  std::vector<std::vector<Token>> out;
  while (static_cast<int>(out.size()) < n) {
    std::vector<Token> x = keys ? data.RandomKey(len, rng) : data.RandomValue(len, rng);
    if (!Contains(out, x) && !Contains(avoid, x)) out.push_back(std::move(x));
  }
  return out;
}

}  // namespace

NiahVariant ParseNiahVariant(const std::string& name) {
  if (name == "single") return NiahVariant::kSingle;
  if (name == "multi-key") return NiahVariant::kMultiKey;
  if (name == "multi-value") return NiahVariant::kMultiValue;
  if (name == "multi-query") return NiahVariant::kMultiQuery;
  if (name == "control") return NiahVariant::kControl;
  throw std::invalid_argument("unknown NIAH variant '" + name + "'");
}

int MinNiahTaskLength(const SyntheticData& data, NiahVariant variant, int records) {
  return MinNiahLength(data.config(), Records(variant, records));
}

NiahTask MakeNiahTask(const SyntheticData& data, NiahVariant variant, int length, double depth,
                      int records, Rng* rng) {
  if (records < 1) throw std::invalid_argument("NIAH task: records must be at least 1");
  if (length < MinNiahTaskLength(data, variant, records)) {
    throw std::invalid_argument("NIAH task length " + std::to_string(length) +
                                " is below the minimum " +
                                std::to_string(MinNiahTaskLength(data, variant, records)));
  }
  const int k = data.key_len(), span = data.config().record_len();
  const int value_at = span - data.value_len();  // the value's offset in a record
  NiahTask t;
  t.variant = variant;
  t.prompt.assign(length, 0);
  t.prompt[0] = data.vocab().bos();
  std::vector<bool> taken(length, false);
  taken[0] = true;
  const int query_pos = length - data.config().question_len();
  for (int i = query_pos; i < length; ++i) taken[i] = true;
  const int last = query_pos - 1 - span;  // the last record start leaving a background token

  // Keys: one per record (multi-value: one for all), plus for the control a question key that
  // no record has. Values: distinct.
  const int n = Records(variant, records);
  const bool one_key = variant == NiahVariant::kMultiValue;
  std::vector<std::vector<Token>> keys = Distinct(data, true, one_key ? 1 : n, k, {}, rng);
  if (one_key) keys.assign(n, keys[0]);
  const std::vector<Token> asked =
      variant == NiahVariant::kControl ? Distinct(data, true, 1, k, keys, rng)[0] : keys[0];
  t.values = Distinct(data, false, n, data.value_len(), {}, rng);

  auto place = [&](int pos, int r) {
    for (int i = 0; i < span; ++i) taken[pos + i] = true;
    t.prompt[pos] = data.vocab().key();
    std::copy(keys[r].begin(), keys[r].end(), t.prompt.begin() + pos + 1);
    if (data.config().value_marker) t.prompt[pos + k + 1] = data.vocab().val();
    std::copy(t.values[r].begin(), t.values[r].end(), t.prompt.begin() + pos + value_at);
    RecordSpan s;
    s.record_pos = pos;
    s.value_pos = pos + value_at;
    s.query_pos = query_pos;
    s.answer_pos = length - 1;
    return s;
  };
  std::vector<RecordSpan> spans;
  spans.push_back(
      place(1 + static_cast<int>(std::lround(std::clamp(depth, 0.0, 1.0) * (last - 1))), 0));
  // The others go into the free stretches left and right of the first: each record picks a
  // stretch with probability proportional to its length (the other one when it is full), and
  // the records of a stretch are spread by random gaps.
  const int first = spans[0].record_pos;
  const int seg_begin[2] = {1, first + span};
  const int seg_len[2] = {std::max(0, first - 1),
                          std::max(0, last + span - 1 - (first + span) + 1)};
  const int room[2] = {seg_len[0] / span, seg_len[1] / span};
  if (room[0] + room[1] < n - 1) {
    throw std::invalid_argument("NIAH task: no room for " + std::to_string(n) +
                                " records in length " + std::to_string(length));
  }
  int count[2] = {0, 0};
  for (int r = 1; r < n; ++r) {
    int side = rng->Below(seg_len[0] + seg_len[1]) < seg_len[0] ? 0 : 1;
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
  const std::vector<Token> question = Question(data, asked);
  std::copy(question.begin(), question.end(), t.prompt.begin() + query_pos);
  data.FillBackground(taken, &t.prompt, rng);

  switch (variant) {
    case NiahVariant::kSingle:
    case NiahVariant::kMultiKey:
      t.needles = {spans[0]};
      t.distractors.assign(spans.begin() + 1, spans.end());
      t.answers = {t.values[0]};
      break;
    case NiahVariant::kControl:
      t.distractors = spans;
      break;
    case NiahVariant::kMultiValue:
      t.needles = spans;
      t.answers = t.values;
      for (int i = 1; i < n; ++i) t.suffixes.push_back(question);
      break;
    case NiahVariant::kMultiQuery:
      t.needles = spans;
      t.answers = t.values;
      for (int i = 1; i < n; ++i) t.suffixes.push_back(Question(data, keys[i]));
      break;
  }
  return t;
}

double ScoreNiahTask(const NiahTask& task, const std::vector<std::vector<Token>>& decoded) {
  if (task.variant == NiahVariant::kControl) {
    throw std::invalid_argument("NIAH control task: there is no answer to score");
  }
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
    return static_cast<double>(recovered) / static_cast<double>(task.answers.size());
  }
  int right = 0;
  for (int r = 0; r < rounds; ++r) right += ExactMatch(decoded[r], task.answers[r]);
  return static_cast<double>(right) / rounds;
}

std::vector<Token> KeySwapPrompt(const NiahTask& task, size_t distractor, int key_len) {
  if (distractor >= task.distractors.size() || task.needles.empty()) {
    throw std::invalid_argument("NIAH key swap: the task has no distractor " +
                                std::to_string(distractor));
  }
  // The key follows <K> in a record and <Q> in the question.
  std::vector<Token> prompt = task.prompt;
  const int from = task.distractors[distractor].record_pos + 1;
  const int to = task.needles[0].query_pos + 1;
  std::copy(prompt.begin() + from, prompt.begin() + from + key_len, prompt.begin() + to);
  return prompt;
}

bool CopiedRecordValue(const NiahTask& task, const std::vector<Token>& decoded) {
  return std::any_of(task.values.begin(), task.values.end(),
                     [&](const std::vector<Token>& v) { return ExactMatch(decoded, v); });
}

}  // namespace onset::model
