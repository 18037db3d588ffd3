#include "model/evaluator.h"

#include <algorithm>

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
      short_context_(config.eval.resolved_short_context(config.model)),
      device_(device) {
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
        prompts.push_back(group.samples.back().prompt);
      }
    }
    if (group.samples.empty()) continue;
    group.prompts = ToTensor(prompts, device);  // (B, L)
    niah_.push_back(std::move(group));
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

std::map<std::string, double> Evaluator::Niah(Transformer& model) const {
  std::map<std::string, double> metrics;
  const int window = model_config_.HasSliding() ? model_config_.window : 0;
  int correct = 0, total = 0, in_correct = 0, in_total = 0, out_correct = 0, out_total = 0;
  for (const NiahGroup& group : niah_) {
    const int steps = static_cast<int>(group.samples[0].answer.size());
    at::Tensor decoded = CachedGreedyDecode(model, group.prompts, steps).to(at::kCPU);  // (B, m)
    int group_correct = 0;
    for (size_t b = 0; b < group.samples.size(); ++b) {
      const NiahSample& s = group.samples[b];
      at::Tensor row = decoded[static_cast<int64_t>(b)];  // (m)
      std::vector<Token> predicted(row.data_ptr<int64_t>(), row.data_ptr<int64_t>() + steps);
      const bool ok = ExactMatch(predicted, s.answer);
      group_correct += ok;
      if (window > 0 && s.needle.distance() < window) {
        in_correct += ok;
        ++in_total;
      } else if (window > 0) {
        out_correct += ok;
        ++out_total;
      }
    }
    metrics["niah/acc@" + std::to_string(group.length)] =
        static_cast<double>(group_correct) / static_cast<double>(group.samples.size());
    correct += group_correct;
    total += static_cast<int>(group.samples.size());
  }
  if (total > 0) metrics["niah/acc"] = static_cast<double>(correct) / total;
  if (in_total > 0) metrics["niah/acc_in_window"] = static_cast<double>(in_correct) / in_total;
  if (out_total > 0) metrics["niah/acc_beyond_window"] = static_cast<double>(out_correct) / out_total;
  return metrics;
}

std::map<std::string, double> Evaluator::Run(Transformer& model, bool autocast_bf16) {
  EvalModeScope mode(model);
  torch::NoGradGuard no_grad;
  AutocastScope autocast(autocast_bf16);
  std::map<std::string, double> metrics;
  if (heldout_.defined()) {
    metrics["eval/heldout_loss"] = HeldoutLoss(model, model_config_.seq_len);
    metrics["eval/short_loss"] = HeldoutLoss(model, short_context_);
  }
  for (const auto& [name, value] : Niah(model)) metrics[name] = value;
  return metrics;
}

}  // namespace onset::model
