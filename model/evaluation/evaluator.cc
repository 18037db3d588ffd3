#include "model/evaluation/evaluator.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <utility>

#include <torch/utils.h>

#include "base/metric_names.h"
#include "model/evaluation/head_ablation.h"
#include "model/evaluation/heldout_loss.h"
#include "model/evaluation/length_summary.h"
#include "model/nn/precision.h"

namespace onset::model {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Restores train/eval mode on scope exit.
class EvalModeScope {
 public:
  explicit EvalModeScope(Transformer& model) : model_(model), was_training_(model->is_training()) {
    model_->eval();
  }
  ~EvalModeScope() { model_->train(was_training_); }

 private:
  Transformer& model_;
  bool was_training_;
};

// Masks the given flat heads (layer * H + head, over every layer) while in scope.
class HeadMaskScope {
 public:
  HeadMaskScope(Transformer& model, const std::vector<int>& heads) : model_(model) {
    if (heads.empty()) return;
    const int L = model->config().layers, H = model->config().heads;
    std::vector<at::Tensor> masks(L);
    for (at::Tensor& m : masks) m = at::ones({H});  // (H)
    for (int i : heads) masks[i / H][i % H] = 0.0;
    for (int l = 0; l < L; ++l) model_->block(l)->mixer().SetHeadMask(masks[l]);
    active_ = true;
  }
  ~HeadMaskScope() {
    if (!active_) return;
    for (int l = 0; l < model_->config().layers; ++l) {
      model_->block(l)->mixer().SetHeadMask(at::Tensor());
    }
  }
  HeadMaskScope(const HeadMaskScope&) = delete;
  HeadMaskScope& operator=(const HeadMaskScope&) = delete;

 private:
  Transformer& model_;
  bool active_ = false;
};

// Correct / total counts of a bucket; reported only when it holds samples.
struct Bucket {
  int right = 0, total = 0;
  void Add(bool ok) {
    right += ok;
    ++total;
  }
  double Rate() const { return total > 0 ? static_cast<double>(right) / total : kNaN; }
  void Report(const std::string& name, std::map<std::string, double>* metrics) const {
    if (total > 0) (*metrics)[name] = Rate();
  }
};

// Per-length values of one metric, summarised within and beyond the training length.
struct LengthMeans {
  std::map<int, double> per_length;
  void Add(int length, double v) { per_length[length] = v; }
  void Report(int seq_len, const std::string& within, const std::string& beyond,
              std::map<std::string, double>* metrics) const {
    const LengthSummary s = SummariseLengths(per_length, seq_len);
    if (s.within) (*metrics)[within] = *s.within;
    if (s.beyond && !beyond.empty()) (*metrics)[beyond] = *s.beyond;
  }
};

// Mean, sample standard deviation, min and max of `values` under `prefix`.
void ReportSpread(const std::string& prefix, const std::vector<double>& values,
                  std::map<std::string, double>* metrics) {
  const size_t n = values.size();
  double mean = 0;
  for (double a : values) mean += a;
  mean /= static_cast<double>(n);
  double var = 0;
  for (double a : values) var += (a - mean) * (a - mean);
  (*metrics)[metric::SpreadMean(prefix)] = mean;
  (*metrics)[metric::SpreadStd(prefix)] = n > 1 ? std::sqrt(var / static_cast<double>(n - 1)) : 0.0;
  (*metrics)[metric::SpreadMin(prefix)] = *std::min_element(values.begin(), values.end());
  (*metrics)[metric::SpreadMax(prefix)] = *std::max_element(values.begin(), values.end());
  (*metrics)[metric::SpreadDraws(prefix)] = static_cast<double>(n);
}

}  // namespace

at::Tensor ToTensor(const std::vector<std::vector<Token>>& rows, const at::Device& device) {
  const int64_t B = static_cast<int64_t>(rows.size());
  const int64_t L = B ? static_cast<int64_t>(rows[0].size()) : 0;
  at::Tensor out = at::empty({B, L}, at::kLong);  // (B, L) on the CPU
  int64_t* p = out.data_ptr<int64_t>();
  for (const auto& row : rows) {
    TORCH_CHECK(static_cast<int64_t>(row.size()) == L, "ToTensor: rows differ in length");
    p = std::copy(row.begin(), row.end(), p);
  }
  return out.to(device);
}

Evaluator::Evaluator(const CellConfig& config, const SyntheticData& data, const at::Device& device)
    : model_config_(config.model),
      data_config_(config.data),
      value_len_(config.data.value_len),
      niah_window_(config.eval.resolved_niah_window(config.model)),
      short_context_(config.eval.resolved_short_context(config.model)),
      rh_min_samples_(config.eval.rh_min_samples),
      ablation_heads_(config.eval.ablation_heads),
      ablation_draws_(config.eval.ablation_draws),
      ablation_seed_(MixSeed(static_cast<uint64_t>(config.train.seed), kAblationStream)),
      device_(device) {
  for (int i = 0; i < config.model.layers; ++i) {
    const char kind = config.model.pattern[i];
    if (kind == kFullAttention || kind == kSlidingWindow) attention_layers_.push_back(i);
  }
  if (config.eval.heldout_seqs > 0) {
    SequenceStream stream(&data, MixSeed(static_cast<uint64_t>(config.data.seed), kHeldoutStream),
                          config.model.seq_len + 1);
    std::vector<std::vector<Token>> rows;
    const int T = config.model.seq_len;
    at::Tensor background = at::zeros({config.eval.heldout_seqs, T}, at::kBool);  // (N, T)
    auto mark = background.accessor<bool, 2>();
    for (int i = 0; i < config.eval.heldout_seqs; ++i) {
      const Sequence seq = stream.Next();
      const std::vector<bool> is_background = BackgroundTokens(seq, config.data);
      for (int t = 0; t < T; ++t) mark[i][t] = is_background[t + 1];  // target t is token t + 1
      rows.push_back(seq.tokens);
    }
    heldout_ = ToTensor(rows, device);            // (N, seq_len + 1)
    heldout_background_ = background.to(device);  // (N, seq_len)
  }
  headline_ = MakeGroups(config, data, NiahVariant::kMultiKey, metric::kHeadlineGroup);
  control_ = MakeGroups(config, data, NiahVariant::kControl, metric::kControlGroup);
  for (const std::string& name : config.eval.niah_variants) {
    for (TaskGroup& g :
         MakeGroups(config, data, ParseNiahVariant(name), metric::VariantGroup(name))) {
      variants_.push_back(std::move(g));
    }
  }
  MakeKeySwaps(config);
}

std::vector<Evaluator::TaskGroup> Evaluator::MakeGroups(const CellConfig& config,
                                                        const SyntheticData& data,
                                                        NiahVariant variant,
                                                        const std::string& name) const {
  const EvalConfig& e = config.eval;
  const uint64_t seed = MixSeed(MixSeed(static_cast<uint64_t>(config.data.seed), kNiahStream),
                                static_cast<uint64_t>(variant));
  std::vector<TaskGroup> groups;
  for (int length : e.resolved_niah_lengths(config.model.seq_len)) {
    if (length < MinNiahTaskLength(data, variant, e.niah_records)) continue;
    TaskGroup group;
    group.name = name;
    group.length = length;
    group.in_length = length <= config.model.seq_len;
    std::vector<std::vector<Token>> prompts;
    for (size_t d = 0; d < e.niah_depths.size(); ++d) {
      for (int s = 0; s < e.niah_samples; ++s) {
        Rng rng(MixSeed(MixSeed(seed, static_cast<uint64_t>(length)), d * 100003 + s));
        group.tasks.push_back(
            MakeNiahTask(data, variant, length, e.niah_depths[d], e.niah_records, &rng));
        group.depths.push_back(e.niah_depths[d]);
        group.sample.push_back(s);
        prompts.push_back(group.tasks.back().prompt);
      }
    }
    if (group.tasks.empty()) continue;
    group.prompts = ToTensor(prompts, device_);  // (B, L)
    groups.push_back(std::move(group));
  }
  return groups;
}

void Evaluator::MakeKeySwaps(const CellConfig& config) {
  const uint64_t seed =
      MixSeed(MixSeed(static_cast<uint64_t>(config.data.seed), kNiahStream), kKeySwapStream);
  for (const TaskGroup& group : headline_) {
    std::vector<std::vector<Token>> prompts;
    std::vector<size_t> records;
    for (size_t b = 0; b < group.tasks.size(); ++b) {
      const NiahTask& task = group.tasks[b];
      if (task.distractors.empty()) break;  // one record: nothing to swap to
      Rng rng(MixSeed(MixSeed(seed, static_cast<uint64_t>(group.length)), b));
      const auto d = static_cast<size_t>(rng.Below(static_cast<int64_t>(task.distractors.size())));
      prompts.push_back(KeySwapPrompt(task, d, config.data.key_len));
      records.push_back(d);
    }
    const bool complete = prompts.size() == group.tasks.size();
    key_swaps_.push_back(complete ? ToTensor(prompts, device_) : at::Tensor());
    key_swap_records_.push_back(complete ? records : std::vector<size_t>());
  }
}

std::vector<std::vector<std::vector<Token>>> Evaluator::Decode(Transformer& model,
                                                               const TaskGroup& group,
                                                               AttentionTrace* trace) const {
  const size_t B = group.tasks.size();
  const int m = value_len_;
  std::vector<std::vector<std::vector<Token>>> decoded(B);  // [task][round][m]
  std::vector<std::vector<Token>> seqs;
  for (int r = 0; r < group.tasks[0].rounds(); ++r) {
    at::Tensor prompts = group.prompts;  // (B, L_r)
    if (r > 0) {
      if (seqs.empty()) {
        for (const NiahTask& t : group.tasks) seqs.push_back(t.prompt);
      }
      for (size_t b = 0; b < B; ++b) {
        const std::vector<Token>& prev = decoded[b].back();
        const std::vector<Token>& next = group.tasks[b].suffixes[r - 1];
        seqs[b].insert(seqs[b].end(), prev.begin(), prev.end());
        seqs[b].insert(seqs[b].end(), next.begin(), next.end());
      }
      prompts = ToTensor(seqs, device_);
    }
    at::Tensor out = CachedGreedyDecode(model, prompts, m, nullptr, r == 0 ? trace : nullptr)
                         .to(at::kCPU);  // (B, m)
    for (size_t b = 0; b < B; ++b) {
      const int64_t* p = out[static_cast<int64_t>(b)].data_ptr<int64_t>();
      decoded[b].emplace_back(p, p + m);
    }
  }
  return decoded;
}

std::vector<std::vector<Token>> Evaluator::DecodeOnce(Transformer& model, const at::Tensor& prompts,
                                                      AttentionTrace* trace) const {
  at::Tensor out =
      CachedGreedyDecode(model, prompts, value_len_, nullptr, trace).to(at::kCPU);  // (B, m)
  std::vector<std::vector<Token>> decoded;
  for (int64_t b = 0; b < out.size(0); ++b) {
    const int64_t* p = out[b].data_ptr<int64_t>();
    decoded.emplace_back(p, p + value_len_);
  }
  return decoded;
}

std::map<std::string, double> Evaluator::Losses(Transformer& model) const {
  std::map<std::string, double> metrics;
  if (!heldout_.defined()) return metrics;
  const int64_t T = model_config_.seq_len;
  metrics[metric::kHeldoutLoss] = WindowedLoss(model, heldout_, at::Tensor(), T);
  const double background = WindowedLoss(model, heldout_, heldout_background_, T);
  if (!std::isnan(background)) {
    metrics[metric::kHeldoutBackgroundLoss] = background;
    metrics[metric::kShortLoss] =
        WindowedLoss(model, heldout_, heldout_background_, short_context_);
  }
  return metrics;
}

std::map<std::string, double> Evaluator::Niah(Transformer& model, Decoded* out, bool trace) const {
  std::map<std::string, double> metrics;
  const int own_window = model_config_.HasSliding() ? model_config_.window : 0;
  Bucket in_window, beyond_window, in_own, beyond_own;
  std::map<double, Bucket> by_depth;
  LengthMeans means;
  if (out) *out = Decoded{};
  for (const TaskGroup& group : headline_) {
    AttentionTrace traced;
    const bool tracing = out && trace && group.in_length;
    const auto decoded = Decode(model, group, tracing ? &traced : nullptr);
    Bucket length;
    for (size_t b = 0; b < group.tasks.size(); ++b) {
      const NiahTask& task = group.tasks[b];
      const bool ok = ScoreNiahTask(task, decoded[b]) == 1.0;
      length.Add(ok);
      if (!group.in_length) continue;
      by_depth[group.depths[b]].Add(ok);
      const int distance = task.needles[0].distance();
      (distance < niah_window_ ? in_window : beyond_window).Add(ok);
      if (own_window > 0) (distance < own_window ? in_own : beyond_own).Add(ok);
    }
    length.Report(metric::AtLength(metric::kNiahAcc, group.length), &metrics);
    means.Add(group.length, length.Rate());
    if (out) {
      out->answers.emplace_back();
      for (const auto& rounds : decoded) out->answers.back().push_back(rounds[0]);
      if (trace) out->traces.push_back(std::move(traced));
    }
  }
  means.Report(model_config_.seq_len, metric::kNiahAcc, metric::kNiahExtrapolationAcc, &metrics);
  for (const auto& [depth, bucket] : by_depth) {
    bucket.Report(metric::AtDepth(metric::kNiahAccDepth, depth), &metrics);
  }
  in_window.Report(metric::kNiahAccInWindow, &metrics);
  beyond_window.Report(metric::kNiahAccBeyondWindow, &metrics);
  in_own.Report(metric::kNiahAccInOwnWindow, &metrics);
  beyond_own.Report(metric::kNiahAccBeyondOwnWindow, &metrics);
  return metrics;
}

std::map<std::string, double> Evaluator::Control(Transformer& model, const Decoded* headline,
                                                 Decoded* swaps, bool trace) const {
  std::map<std::string, double> metrics;
  LengthMeans copy;
  for (const TaskGroup& group : control_) {
    const auto decoded = Decode(model, group, nullptr);
    Bucket length;
    for (size_t b = 0; b < group.tasks.size(); ++b) {
      length.Add(CopiedRecordValue(group.tasks[b], decoded[b][0]));
    }
    length.Report(metric::AtLength(metric::kDistractorCopyRate, group.length), &metrics);
    copy.Add(group.length, length.Rate());
  }
  copy.Report(model_config_.seq_len, metric::kDistractorCopyRate, "", &metrics);

  Decoded decoded_headline;
  if (headline == nullptr) {
    Niah(model, &decoded_headline);
    headline = &decoded_headline;
  }
  if (swaps) *swaps = Decoded{};
  LengthMeans swap;
  for (size_t g = 0; g < headline_.size(); ++g) {
    AttentionTrace traced;
    const bool tracing = swaps && trace && headline_[g].in_length;
    std::vector<std::vector<Token>> answers;
    if (key_swaps_[g].defined()) {
      answers = DecodeOnce(model, key_swaps_[g], tracing ? &traced : nullptr);
      Bucket length;
      for (size_t b = 0; b < answers.size(); ++b) {
        length.Add(answers[b] == headline->answers[g][b]);
      }
      length.Report(metric::AtLength(metric::kKeySwapRate, headline_[g].length), &metrics);
      swap.Add(headline_[g].length, length.Rate());
    }
    if (swaps) {
      swaps->answers.push_back(std::move(answers));
      if (trace) swaps->traces.push_back(std::move(traced));
    }
  }
  swap.Report(model_config_.seq_len, metric::kKeySwapRate, "", &metrics);
  return metrics;
}

std::map<std::string, double> Evaluator::NiahVariants(Transformer& model) const {
  std::map<std::string, double> metrics;
  std::map<std::string, LengthMeans> overall;
  for (const TaskGroup& group : variants_) {
    const auto decoded = Decode(model, group, nullptr);
    double sum = 0;
    for (size_t b = 0; b < group.tasks.size(); ++b)
      sum += ScoreNiahTask(group.tasks[b], decoded[b]);
    const double acc = sum / static_cast<double>(group.tasks.size());
    metrics[metric::AtLength(metric::GroupAcc(group.name), group.length)] = acc;
    overall[group.name].Add(group.length, acc);
  }
  for (const auto& [name, means] : overall) {
    means.Report(model_config_.seq_len, metric::GroupAcc(name), "", &metrics);
  }
  return metrics;
}

std::map<std::string, double> Evaluator::RetrievalMetrics(const Decoded& headline,
                                                          const Decoded& swaps) const {
  constexpr double kRetrievalHead = 0.1;  // docs/metrics.md, "Retrieval heads"
  const int heads = static_cast<int>(attention_layers_.size()) * model_config_.heads;
  RetrievalHeadScorer scorer(heads, model_config_.seq_len, rh_min_samples_);
  for (size_t g = 0; g < headline_.size(); ++g) {
    const TaskGroup& group = headline_[g];
    if (!group.in_length || !key_swaps_[g].defined() || g >= headline.traces.size() ||
        g >= swaps.traces.size() || !headline.traces[g].top1.defined() ||
        !swaps.traces[g].top1.defined()) {
      continue;
    }
    // [step][head] of sample b from a (B, S, A, H) trace.
    auto steps = [&](const AttentionTrace& t, size_t b) {
      at::Tensor top1 = t.top1[static_cast<int64_t>(b)].reshape({value_len_, -1});  // (m, A*H)
      std::vector<std::vector<int64_t>> out;
      for (int s = 0; s < value_len_; ++s) {
        const int64_t* p = top1[s].data_ptr<int64_t>();
        out.emplace_back(p, p + top1.size(1));
      }
      return out;
    };
    for (size_t b = 0; b < group.tasks.size(); ++b) {
      const NiahTask& task = group.tasks[b];
      RetrievalSample r;
      r.prompt_len = group.length;
      r.value_len = value_len_;
      r.needle_value = task.needles[0].value_pos;
      r.swap_value = task.distractors[key_swap_records_[g][b]].value_pos;
      r.asked = steps(headline.traces[g], b);
      r.swapped = steps(swaps.traces[g], b);
      scorer.Add(r);
    }
  }
  std::map<std::string, double> metrics;
  metrics[metric::kRhSamples] = scorer.samples();
  const std::vector<double> scores = scorer.Scores();
  if (scores.empty()) return metrics;  // too few samples: no score, not 0
  const int H = model_config_.heads;
  bool has_full = false, has_sliding = false;
  double max_full = -1;
  int count_full = 0, count_sliding = 0;
  for (size_t a = 0; a < attention_layers_.size(); ++a) {
    const int layer = attention_layers_[a];
    const bool full = model_config_.pattern[layer] == kFullAttention;
    (full ? has_full : has_sliding) = true;
    for (int h = 0; h < H; ++h) {
      const double score = scores[a * H + h];
      metrics[metric::HeadName(metric::kRhScore, layer, h)] = score;
      if (full) max_full = std::max(max_full, score);
      if (score > kRetrievalHead) ++(full ? count_full : count_sliding);
    }
  }
  if (has_full) {
    metrics[metric::kRhMaxFull] = max_full;
    metrics[metric::kRhCountFull] = count_full;
  }
  if (has_sliding) metrics[metric::kRhCountSliding] = count_sliding;
  return metrics;
}

double Evaluator::HeadlineAccuracy(Transformer& model, Half half,
                                   const std::vector<int>& masked) const {
  HeadMaskScope scope(model, masked);
  double sum = 0;
  int lengths = 0;
  for (const TaskGroup& group : headline_) {
    if (!group.in_length) continue;
    std::vector<int64_t> rows;
    for (size_t b = 0; b < group.tasks.size(); ++b) {
      const bool even = group.sample[b] % 2 == 0;
      if (half == Half::kAll || (half == Half::kSelection) == even) {
        rows.push_back(static_cast<int64_t>(b));
      }
    }
    if (rows.empty()) continue;
    at::Tensor index = at::tensor(rows, at::kLong).to(device_);
    at::Tensor out = CachedGreedyDecode(model, group.prompts.index_select(0, index), value_len_)
                         .to(at::kCPU);  // (n, m)
    Bucket bucket;
    for (size_t i = 0; i < rows.size(); ++i) {
      const int64_t* p = out[static_cast<int64_t>(i)].data_ptr<int64_t>();
      bucket.Add(ExactMatch(std::vector<Token>(p, p + value_len_),
                            group.tasks[static_cast<size_t>(rows[i])].answers[0]));
    }
    sum += bucket.Rate();
    ++lengths;
  }
  return lengths > 0 ? sum / lengths : kNaN;
}

std::map<std::string, double> Evaluator::Ablation(Transformer& model, int k) const {
  std::map<std::string, double> metrics;
  const int L = model_config_.layers, H = model_config_.heads;
  const double selection = HeadlineAccuracy(model, Half::kSelection, {});
  const double test = HeadlineAccuracy(model, Half::kTest, {});
  if (std::isnan(selection) || std::isnan(test)) {
    std::fprintf(stderr,
                 "ablation: skipped: a half of the in-length headline prompts is empty "
                 "(eval.niah_samples must be at least 2)\n");
    return metrics;
  }
  metrics[metric::kAblationSelectionAcc] = selection;
  metrics[metric::kAblationTestAcc] = test;
  // Each head's score: what masking it alone costs on the selection half.
  std::vector<double> scores;
  std::vector<char> kinds;
  for (int l = 0; l < L; ++l) {
    for (int h = 0; h < H; ++h) {
      const double drop = selection - HeadlineAccuracy(model, Half::kSelection, {l * H + h});
      metrics[metric::HeadName(metric::kAblationDrop, l, h)] = drop;
      scores.push_back(drop);
      kinds.push_back(model_config_.pattern[l]);
    }
  }
  const AblationPlan plan = PlanAblation(scores, kinds, k, ablation_draws_, ablation_seed_);
  if (plan.top.empty()) return metrics;
  metrics[metric::kAblationTopKAcc] = HeadlineAccuracy(model, Half::kTest, plan.top);
  metrics[metric::kAblationTopKHeads] = static_cast<double>(plan.top.size());
  metrics[metric::kAblationTopKFullHeads] = static_cast<double>(std::count_if(
      plan.top.begin(), plan.top.end(), [&](int i) { return kinds[i] == kFullAttention; }));
  if (!plan.note.empty()) std::fprintf(stderr, "ablation: %s\n", plan.note.c_str());
  if (!plan.baselines.empty()) {
    std::vector<double> acc;
    for (const std::vector<int>& draw : plan.baselines) {
      acc.push_back(HeadlineAccuracy(model, Half::kTest, draw));
    }
    ReportSpread(plan.same_mix ? metric::kAblationRandomK : metric::kAblationRandomKAnyMix, acc,
                 &metrics);
  }
  const std::string efficient{kSlidingWindow, kLinearAttention, kGatedDeltaNet};
  for (const auto& [name, letters] :
       {std::pair<std::string, std::string>{"full", "F"},
        std::pair<std::string, std::string>{"efficient", efficient}}) {
    const std::vector<int> top = TopHeadsOf(scores, kinds, letters, k);
    if (top.empty()) continue;
    metrics[metric::AblationKindAcc(name)] = HeadlineAccuracy(model, Half::kTest, top);
    metrics[metric::AblationKindHeads(name)] = static_cast<double>(top.size());
  }
  return metrics;
}

std::map<std::string, double> Evaluator::DecodeHeadline(Transformer& model, bool autocast_bf16,
                                                        Decoded* decoded) const {
  EvalModeScope mode(model);
  torch::NoGradGuard no_grad;
  AutocastScope autocast(autocast_bf16, device_.type());
  return Niah(model, decoded);
}

std::map<std::string, double> Evaluator::Run(Transformer& model, bool autocast_bf16,
                                             bool final_eval) {
  using Clock = std::chrono::steady_clock;
  auto seconds = [](Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
  };
  EvalModeScope mode(model);
  torch::NoGradGuard no_grad;
  AutocastScope autocast(autocast_bf16, device_.type());
  std::map<std::string, double> metrics = Losses(model);
  const bool heads = !attention_layers_.empty();
  auto t0 = Clock::now();
  Decoded headline, swaps;
  metrics.merge(Niah(model, &headline, /*trace=*/heads));
  metrics.merge(Control(model, &headline, &swaps, /*trace=*/heads));
  metrics.merge(NiahVariants(model));
  metrics[metric::kNiahSeconds] = seconds(t0);
  t0 = Clock::now();
  if (heads) metrics.merge(RetrievalMetrics(headline, swaps));
  if (final_eval && ablation_heads_ > 0 && !headline_.empty()) {
    metrics.merge(Ablation(model, ablation_heads_));
  }
  metrics[metric::kProbeSeconds] = seconds(t0);
  return metrics;
}

}  // namespace onset::model
