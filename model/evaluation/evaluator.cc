#include "model/evaluation/evaluator.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <utility>

#include <torch/utils.h>

#include "model/evaluation/head_ablation.h"
#include "model/evaluation/heldout_loss.h"
#include "model/nn/precision.h"

namespace onset::model {
namespace {

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

// Masks the given flat heads (a * H + h over the attention layers) while in scope.
class HeadMaskScope {
 public:
  HeadMaskScope(Transformer& model, const std::vector<int>& layers, const std::vector<int>& heads)
      : model_(model), layers_(layers) {
    const int H = model->config().heads;
    std::vector<at::Tensor> masks(layers.size());
    for (at::Tensor& m : masks) m = at::ones({H});  // (H)
    for (int i : heads) masks[i / H][i % H] = 0.0;
    for (size_t a = 0; a < layers.size(); ++a) Mixer(a).SetHeadMask(masks[a]);
  }
  ~HeadMaskScope() {
    for (size_t a = 0; a < layers_.size(); ++a) Mixer(a).SetHeadMask(at::Tensor());
  }
  HeadMaskScope(const HeadMaskScope&) = delete;
  HeadMaskScope& operator=(const HeadMaskScope&) = delete;

 private:
  AttentionMixer& Mixer(size_t a) {
    return dynamic_cast<AttentionMixer&>(model_->block(layers_[a])->mixer());
  }
  Transformer& model_;
  const std::vector<int>& layers_;
};

// Correct / total counts of a bucket; reported only when it holds samples.
struct Bucket {
  int right = 0, total = 0;
  void Add(bool ok) {
    right += ok;
    ++total;
  }
  void Report(const std::string& name, std::map<std::string, double>* metrics) const {
    if (total > 0) (*metrics)[name] = static_cast<double>(right) / total;
  }
};

std::string DepthName(const std::string& prefix, double depth) {
  char name[64];
  std::snprintf(name, sizeof name, "%s%g", prefix.c_str(), depth);
  return name;
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
      value_len_(config.data.value_len),
      niah_window_(config.eval.resolved_niah_window(config.model)),
      short_context_(config.eval.resolved_short_context(config.model)),
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
    for (int i = 0; i < config.eval.heldout_seqs; ++i) rows.push_back(stream.Next().tokens);
    heldout_ = ToTensor(rows, device);  // (N, seq_len + 1)
  }
  headline_ = MakeGroups(config, data, NiahVariant::kMultiKey, "niah");
  control_ = MakeGroups(config, data, NiahVariant::kControl, "niah/control");
  for (const std::string& name : config.eval.niah_variants) {
    for (TaskGroup& g : MakeGroups(config, data, ParseNiahVariant(name), "niah/" + name)) {
      variants_.push_back(std::move(g));
    }
  }
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
    std::vector<std::vector<Token>> prompts;
    for (size_t d = 0; d < e.niah_depths.size(); ++d) {
      for (int s = 0; s < e.niah_samples; ++s) {
        Rng rng(MixSeed(MixSeed(seed, static_cast<uint64_t>(length)), d * 100003 + s));
        group.tasks.push_back(
            MakeNiahTask(data, variant, length, e.niah_depths[d], e.niah_records, &rng));
        group.depths.push_back(e.niah_depths[d]);
        prompts.push_back(group.tasks.back().prompt);
      }
    }
    if (group.tasks.empty()) continue;
    group.prompts = ToTensor(prompts, device_);  // (B, L)
    groups.push_back(std::move(group));
  }
  return groups;
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

std::map<std::string, double> Evaluator::Niah(Transformer& model,
                                              RetrievalHeadScorer* scorer) const {
  std::map<std::string, double> metrics;
  const int own_window = model_config_.HasSliding() ? model_config_.window : 0;
  Bucket all, in_window, beyond_window, in_own, beyond_own;
  std::map<double, Bucket> by_depth;
  for (const TaskGroup& group : headline_) {
    AttentionTrace trace;
    const auto decoded = Decode(model, group, scorer ? &trace : nullptr);
    Bucket length;
    for (size_t b = 0; b < group.tasks.size(); ++b) {
      const NiahTask& task = group.tasks[b];
      const bool ok = ScoreNiahTask(task, decoded[b]) == 1.0;
      length.Add(ok);
      all.Add(ok);
      by_depth[group.depths[b]].Add(ok);
      const int distance = task.needles[0].distance();
      (distance < niah_window_ ? in_window : beyond_window).Add(ok);
      if (own_window > 0) (distance < own_window ? in_own : beyond_own).Add(ok);
      if (scorer) {
        RetrievalSample r;
        r.sequence = task.prompt;
        r.sequence.insert(r.sequence.end(), decoded[b][0].begin(), decoded[b][0].end());
        r.prompt_len = static_cast<int>(task.prompt.size());
        r.value_begin = task.needles[0].value_pos;
        r.value_len = value_len_;
        at::Tensor top1 =
            trace.top1[static_cast<int64_t>(b)].reshape({value_len_, -1});  // (m, A*H)
        for (int step = 0; step < value_len_; ++step) {
          const int64_t* p = top1[step].data_ptr<int64_t>();
          r.top1.emplace_back(p, p + top1.size(1));
        }
        scorer->Add(r);
      }
    }
    length.Report("niah/acc@" + std::to_string(group.length), &metrics);
  }
  all.Report("niah/acc", &metrics);
  for (const auto& [depth, bucket] : by_depth) {
    bucket.Report(DepthName("niah/acc_depth@", depth), &metrics);
  }
  in_window.Report("niah/acc_in_window", &metrics);
  beyond_window.Report("niah/acc_beyond_window", &metrics);
  in_own.Report("niah/acc_in_own_window", &metrics);
  beyond_own.Report("niah/acc_beyond_own_window", &metrics);
  return metrics;
}

std::map<std::string, double> Evaluator::Control(Transformer& model) const {
  std::map<std::string, double> metrics;
  Bucket all;
  for (const TaskGroup& group : control_) {
    const auto decoded = Decode(model, group, nullptr);
    Bucket length;
    for (size_t b = 0; b < group.tasks.size(); ++b) {
      const bool copied = CopiedRecordValue(group.tasks[b], decoded[b][0]);
      length.Add(copied);
      all.Add(copied);
    }
    length.Report("niah/control/distractor_copy_rate@" + std::to_string(group.length), &metrics);
  }
  all.Report("niah/control/distractor_copy_rate", &metrics);
  return metrics;
}

std::map<std::string, double> Evaluator::NiahVariants(Transformer& model) const {
  std::map<std::string, double> metrics;
  std::map<std::string, std::pair<double, int>> overall;  // name -> (score sum, tasks)
  for (const TaskGroup& group : variants_) {
    const auto decoded = Decode(model, group, nullptr);
    double sum = 0;
    for (size_t b = 0; b < group.tasks.size(); ++b)
      sum += ScoreNiahTask(group.tasks[b], decoded[b]);
    const int n = static_cast<int>(group.tasks.size());
    metrics[group.name + "/acc@" + std::to_string(group.length)] = sum / n;
    overall[group.name].first += sum;
    overall[group.name].second += n;
  }
  for (const auto& [name, acc] : overall) metrics[name + "/acc"] = acc.first / acc.second;
  return metrics;
}

std::map<std::string, double> Evaluator::RetrievalMetrics(const RetrievalHeadScorer& scorer) const {
  constexpr double kRetrievalHead = 0.1;  // docs/metrics.md, "Retrieval heads"
  std::map<std::string, double> metrics;
  metrics["rh/samples"] = scorer.samples();
  const std::vector<double> scores = scorer.Scores();
  if (scores.empty()) return metrics;  // nothing answered right: no score, not 0
  const int H = model_config_.heads;
  bool has_full = false, has_sliding = false;
  double max_full = 0;
  int count_full = 0, count_sliding = 0;
  for (size_t a = 0; a < attention_layers_.size(); ++a) {
    const int layer = attention_layers_[a];
    const bool full = model_config_.pattern[layer] == kFullAttention;
    (full ? has_full : has_sliding) = true;
    for (int h = 0; h < H; ++h) {
      const double score = scores[a * H + h];
      metrics["rh/score/l" + std::to_string(layer) + "h" + std::to_string(h)] = score;
      if (full) max_full = std::max(max_full, score);
      if (score > kRetrievalHead) ++(full ? count_full : count_sliding);
    }
  }
  if (has_full) {
    metrics["rh/max_full"] = max_full;
    metrics["rh/count_full"] = count_full;
  }
  if (has_sliding) metrics["rh/count_sliding"] = count_sliding;
  return metrics;
}

std::map<std::string, double> Evaluator::Ablation(Transformer& model,
                                                  const std::vector<double>& scores, int k) const {
  std::map<std::string, double> metrics;
  const int H = model_config_.heads;
  std::vector<char> kinds;
  for (int layer : attention_layers_) kinds.insert(kinds.end(), H, model_config_.pattern[layer]);
  const AblationPlan plan = PlanAblation(scores, kinds, k, ablation_draws_, ablation_seed_);
  if (plan.top.empty()) return metrics;
  auto accuracy = [&](const std::vector<int>& heads) {
    HeadMaskScope masked(model, attention_layers_, heads);
    const auto niah = Niah(model);
    return niah.count("niah/acc") ? niah.at("niah/acc") : NAN;
  };
  metrics["ablation/top_k/niah_acc"] = accuracy(plan.top);
  if (plan.baselines.empty()) {
    std::fprintf(stderr, "ablation: no random-head baseline: %s\n", plan.no_baseline.c_str());
    return metrics;
  }
  std::vector<double> acc;
  for (const std::vector<int>& draw : plan.baselines) acc.push_back(accuracy(draw));
  double mean = 0;
  for (double a : acc) mean += a;
  mean /= static_cast<double>(acc.size());
  double var = 0;
  for (double a : acc) var += (a - mean) * (a - mean);
  const size_t n = acc.size();
  metrics["ablation/random_k/niah_acc_mean"] = mean;
  metrics["ablation/random_k/niah_acc_std"] =
      n > 1 ? std::sqrt(var / static_cast<double>(n - 1)) : 0.0;
  metrics["ablation/random_k/niah_acc_min"] = *std::min_element(acc.begin(), acc.end());
  metrics["ablation/random_k/niah_acc_max"] = *std::max_element(acc.begin(), acc.end());
  metrics["ablation/random_k/draws"] = static_cast<double>(n);
  return metrics;
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
  std::map<std::string, double> metrics;
  if (heldout_.defined()) {
    metrics["eval/heldout_loss"] = ChunkedLoss(model, heldout_, model_config_.seq_len);
    metrics["eval/short_loss"] = ChunkedLoss(model, heldout_, short_context_);
  }
  const int heads = static_cast<int>(attention_layers_.size()) * model_config_.heads;
  RetrievalHeadScorer scorer(heads, model_config_.seq_len);
  auto t0 = Clock::now();
  metrics.merge(Niah(model, heads > 0 ? &scorer : nullptr));
  metrics.merge(Control(model));
  metrics.merge(NiahVariants(model));
  metrics["eval/niah_seconds"] = seconds(t0);
  t0 = Clock::now();
  if (heads > 0) {
    metrics.merge(RetrievalMetrics(scorer));
    if (final_eval && ablation_heads_ > 0 && scorer.samples() > 0) {
      metrics.merge(Ablation(model, scorer.Scores(), ablation_heads_));
    }
  }
  metrics["eval/probe_seconds"] = seconds(t0);
  return metrics;
}

}  // namespace onset::model
