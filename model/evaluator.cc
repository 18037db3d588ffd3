#include "model/evaluator.h"

#include <algorithm>
#include <cstdio>
#include <chrono>
#include <numeric>
#include <utility>

#include <torch/utils.h>

#include "model/precision.h"

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
      ablation_heads_(config.eval.ablation_heads),
      ablation_seed_(MixSeed(static_cast<uint64_t>(config.data.seed), kAblationStream)),
      short_context_(config.eval.resolved_short_context(config.model)),
      device_(device) {
  for (int i = 0; i < config.model.layers; ++i) {
    const char kind = config.model.pattern[i];
    if (kind == kFullAttention || kind == kSlidingWindow) attention_layers_.push_back(i);
  }
  const uint64_t data_seed = static_cast<uint64_t>(config.data.seed);
  if (config.eval.heldout_seqs > 0) {
    SequenceStream stream(&data, MixSeed(data_seed, kHeldoutStream), config.model.seq_len + 1);
    std::vector<std::vector<Token>> rows;
    for (int i = 0; i < config.eval.heldout_seqs; ++i) rows.push_back(stream.Next().tokens);
    heldout_ = ToTensor(rows, device);  // (N, seq_len + 1)
  }
  const uint64_t niah_seed = MixSeed(data_seed, kNiahStream);
  for (int length : config.eval.resolved_niah_lengths(config.model.seq_len)) {
    NiahGroup group;
    group.length = length;
    std::vector<std::vector<Token>> prompts;
    for (size_t d = 0; d < config.eval.niah_depths.size(); ++d) {
      for (int s = 0; s < config.eval.niah_samples; ++s) {
        Rng rng(MixSeed(MixSeed(niah_seed, static_cast<uint64_t>(length)), d * 100003 + s));
        group.samples.push_back(data.Niah(length, config.eval.niah_depths[d], &rng));
        group.depths.push_back(config.eval.niah_depths[d]);
        prompts.push_back(group.samples.back().prompt);
      }
    }
    if (group.samples.empty()) continue;
    group.prompts = ToTensor(prompts, device);  // (B, L)
    niah_.push_back(std::move(group));
  }
  for (const std::string& name : config.eval.niah_variants) {
    const NiahVariant variant = ParseNiahVariant(name);
    if (variant == NiahVariant::kSingle) continue;
    const uint64_t variant_seed = MixSeed(niah_seed, static_cast<uint64_t>(variant));
    for (int length : config.eval.resolved_niah_lengths(config.model.seq_len)) {
      if (length < MinNiahTaskLength(data, variant)) continue;
      VariantGroup group{name, length, {}};
      for (size_t d = 0; d < config.eval.niah_depths.size(); ++d) {
        for (int s = 0; s < config.eval.niah_samples; ++s) {
          Rng rng(MixSeed(MixSeed(variant_seed, static_cast<uint64_t>(length)), d * 100003 + s));
          const double depth = config.eval.niah_depths[d];
          group.tasks.push_back(MakeNiahTask(data, variant, length, depth, &rng));
        }
      }
      if (!group.tasks.empty()) variants_.push_back(std::move(group));
    }
  }
}

double Evaluator::HeldoutLoss(Transformer& model, int context) const {
  constexpr int64_t kSeqsPerForward = 16;  // bounds eval memory for large heldout_seqs
  const int64_t N = heldout_.size(0), T = heldout_.size(1) - 1;
  const int64_t c = std::min<int64_t>(context, T);
  const int64_t used = T / c * c;  // positions that fill whole chunks
  double total = 0;
  for (int64_t i = 0; i < N; i += kSeqsPerForward) {
    const int64_t n = std::min(kSeqsPerForward, N - i);
    at::Tensor rows = heldout_.narrow(0, i, n);                         // (n, T + 1)
    at::Tensor x = rows.narrow(1, 0, used).reshape({n * used / c, c});  // (n * used/c, c)
    at::Tensor y = rows.narrow(1, 1, used).reshape({n * used / c, c});  // (n * used/c, c)
    at::Tensor logits = model(x);                                       // (n * used/c, c, V)
    total += at::cross_entropy_loss(logits.reshape({-1, logits.size(-1)}), y.reshape({-1}),
                                    /*weight=*/{}, at::Reduction::Sum)
                 .item<double>();
  }
  return total / static_cast<double>(N * used);
}

std::map<std::string, double> Evaluator::Niah(Transformer& model,
                                              RetrievalHeadScorer* scorer) const {
  std::map<std::string, double> metrics;
  const int window = model_config_.HasSliding() ? model_config_.window : 0;
  int correct = 0, total = 0, in_correct = 0, in_total = 0, out_correct = 0, out_total = 0;
  std::map<double, std::pair<int, int>> by_depth;  // depth -> (correct, total), over lengths
  for (const NiahGroup& group : niah_) {
    const int steps = static_cast<int>(group.samples[0].answer.size());
    AttentionTrace trace;
    at::Tensor decoded = CachedGreedyDecode(model, group.prompts, steps, nullptr,
                                            scorer ? &trace : nullptr)
                             .to(at::kCPU);  // (B, m)
    int group_correct = 0;
    for (size_t b = 0; b < group.samples.size(); ++b) {
      const NiahSample& s = group.samples[b];
      at::Tensor row = decoded[static_cast<int64_t>(b)];  // (m)
      std::vector<Token> predicted(row.data_ptr<int64_t>(), row.data_ptr<int64_t>() + steps);
      const bool ok = ExactMatch(predicted, s.answer);
      group_correct += ok;
      std::pair<int, int>& depth = by_depth[group.depths[b]];
      depth.first += ok;
      ++depth.second;
      if (window > 0 && s.needle.distance() < window) {
        in_correct += ok;
        ++in_total;
      } else if (window > 0) {
        out_correct += ok;
        ++out_total;
      }
      if (scorer) {
        RetrievalSample r;
        r.sequence = s.prompt;
        r.sequence.insert(r.sequence.end(), predicted.begin(), predicted.end());
        r.prompt_len = static_cast<int>(s.prompt.size());
        r.value_begin = s.needle.value_pos;
        r.value_len = steps;
        at::Tensor top1 = trace.top1[static_cast<int64_t>(b)].reshape({steps, -1});  // (m, A*H)
        const int64_t heads = top1.size(1);
        for (int step = 0; step < steps; ++step) {
          const int64_t* p = top1[step].data_ptr<int64_t>();
          r.top1.emplace_back(p, p + heads);
        }
        scorer->Add(r);
      }
    }
    metrics["niah/acc@" + std::to_string(group.length)] =
        static_cast<double>(group_correct) / static_cast<double>(group.samples.size());
    correct += group_correct;
    total += static_cast<int>(group.samples.size());
  }
  if (total > 0) metrics["niah/acc"] = static_cast<double>(correct) / total;
  // By the needle's relative depth, over every length: "niah/acc_depth@0.5".
  for (const auto& [depth, counts] : by_depth) {
    char name[48];
    std::snprintf(name, sizeof name, "niah/acc_depth@%g", depth);
    metrics[name] = static_cast<double>(counts.first) / counts.second;
  }
  if (in_total > 0) metrics["niah/acc_in_window"] = static_cast<double>(in_correct) / in_total;
  if (out_total > 0) metrics["niah/acc_beyond_window"] = static_cast<double>(out_correct) / out_total;
  return metrics;
}

std::map<std::string, double> Evaluator::NiahVariants(Transformer& model) const {
  std::map<std::string, double> metrics;
  std::map<std::string, std::pair<double, int>> overall;  // variant -> (score sum, tasks)
  for (const VariantGroup& group : variants_) {
    const size_t B = group.tasks.size();
    const int m = static_cast<int>(group.tasks[0].answers[0].size());
    std::vector<std::vector<Token>> seqs;
    for (const NiahTask& t : group.tasks) seqs.push_back(t.prompt);
    std::vector<std::vector<std::vector<Token>>> decoded(B);  // [task][round][m]
    for (int r = 0; r < group.tasks[0].rounds(); ++r) {
      if (r > 0) {
        for (size_t b = 0; b < B; ++b) {
          const std::vector<Token>& prev = decoded[b].back();
          const std::vector<Token>& next = group.tasks[b].suffixes[r - 1];
          seqs[b].insert(seqs[b].end(), prev.begin(), prev.end());
          seqs[b].insert(seqs[b].end(), next.begin(), next.end());
        }
      }
      at::Tensor prompts = ToTensor(seqs, device_);                          // (B, L_r)
      at::Tensor out = CachedGreedyDecode(model, prompts, m).to(at::kCPU);  // (B, m)
      for (size_t b = 0; b < B; ++b) {
        const int64_t* p = out[static_cast<int64_t>(b)].data_ptr<int64_t>();
        decoded[b].emplace_back(p, p + m);
      }
    }
    double sum = 0;
    for (size_t b = 0; b < B; ++b) sum += ScoreNiahTask(group.tasks[b], decoded[b]);
    metrics["niah/" + group.variant + "/acc@" + std::to_string(group.length)] = sum / B;
    overall[group.variant].first += sum;
    overall[group.variant].second += static_cast<int>(B);
  }
  for (const auto& [variant, acc] : overall) {
    metrics["niah/" + variant + "/acc"] = acc.first / acc.second;
  }
  return metrics;
}

std::map<std::string, double> Evaluator::RetrievalMetrics(const RetrievalHeadScorer& scorer) const {
  constexpr double kRetrievalHead = 0.1;  // SCIENCE.md: a head above 0.1 is a retrieval head
  std::map<std::string, double> metrics;
  const int H = model_config_.heads;
  const std::vector<double> all = scorer.Scores(), right = scorer.MostlyRightScores();
  bool has_full = false, has_sliding = false;
  double max_full = 0, max_full_right = 0;
  int count_full = 0, count_sliding = 0;
  for (size_t a = 0; a < attention_layers_.size(); ++a) {
    const int layer = attention_layers_[a];
    const bool full = model_config_.pattern[layer] == kFullAttention;
    (full ? has_full : has_sliding) = true;
    for (int h = 0; h < H; ++h) {
      const size_t i = a * H + h;
      metrics["rh/score/l" + std::to_string(layer) + "h" + std::to_string(h)] = all[i];
      if (full) {
        max_full = std::max(max_full, all[i]);
        if (!right.empty()) max_full_right = std::max(max_full_right, right[i]);
      }
      if (all[i] > kRetrievalHead) ++(full ? count_full : count_sliding);
    }
  }
  if (has_full) {
    metrics["rh/max_full"] = max_full;
    metrics["rh/count_full"] = count_full;
    if (!right.empty()) metrics["rh/max_full_mostly_right"] = max_full_right;
  }
  if (has_sliding) metrics["rh/count_sliding"] = count_sliding;
  return metrics;
}

namespace {

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

}  // namespace

std::map<std::string, double> Evaluator::Ablation(Transformer& model,
                                                  const std::vector<double>& scores,
                                                  int k) const {
  std::map<std::string, double> metrics;
  const int n = static_cast<int>(scores.size());
  k = std::min(k, n);
  if (k <= 0) return metrics;
  std::vector<int> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return scores[a] > scores[b]; });
  std::vector<int> top(order.begin(), order.begin() + k);
  // K distinct heads by a partial Fisher-Yates shuffle under a fixed seed.
  std::vector<int> pool(n);
  std::iota(pool.begin(), pool.end(), 0);
  Rng rng(ablation_seed_);
  for (int i = 0; i < k; ++i) std::swap(pool[i], pool[i + rng.Below(n - i)]);
  std::vector<int> random(pool.begin(), pool.begin() + k);
  for (const auto& [name, heads] :
       {std::make_pair("top_k", top), std::make_pair("random_k", random)}) {
    HeadMaskScope masked(model, attention_layers_, heads);
    auto niah = Niah(model);
    if (niah.count("niah/acc")) {
      metrics["ablation/" + std::string(name) + "/niah_acc"] = niah["niah/acc"];
    }
  }
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
  AutocastScope autocast(autocast_bf16);
  std::map<std::string, double> metrics;
  if (heldout_.defined()) {
    metrics["eval/heldout_loss"] = HeldoutLoss(model, model_config_.seq_len);
    metrics["eval/short_loss"] = HeldoutLoss(model, short_context_);
  }
  const int heads = static_cast<int>(attention_layers_.size()) * model_config_.heads;
  RetrievalHeadScorer scorer(heads);
  auto t0 = Clock::now();
  for (const auto& [name, value] : Niah(model, heads > 0 ? &scorer : nullptr)) {
    metrics[name] = value;
  }
  for (const auto& [name, value] : NiahVariants(model)) metrics[name] = value;
  metrics["eval/niah_seconds"] = seconds(t0);
  t0 = Clock::now();
  if (heads > 0 && scorer.samples() > 0) {
    for (const auto& [name, value] : RetrievalMetrics(scorer)) metrics[name] = value;
    if (final_eval && ablation_heads_ > 0) {
      for (const auto& [name, value] : Ablation(model, scorer.Scores(), ablation_heads_)) {
        metrics[name] = value;
      }
    }
  }
  metrics["eval/probe_seconds"] = seconds(t0);
  return metrics;
}

}  // namespace onset::model
