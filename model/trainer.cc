#include "model/trainer.h"

#include <cmath>
#include <cstdio>

#include <torch/nn/utils/clip_grad.h>
#include <torch/utils.h>

#include "model/optimizer.h"
#include "model/precision.h"

namespace onset::model {
namespace {

double Seconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

}  // namespace

Trainer::Trainer(const CellConfig& config, const at::Device& device, MetricsSink* sink)
    : config_(config),
      device_(device),
      bf16_(device.is_cuda()),
      sink_(sink),
      data_(config.data, config.model.seq_len),
      train_stream_(&data_, MixSeed(static_cast<uint64_t>(config.train.seed), kTrainStream),
                    config.model.seq_len + 1),
      schedule_(CosineSchedule::FromConfig(config.train)),
      seqs_per_step_(std::max<int64_t>(1, config.train.batch_tokens / config.model.seq_len)) {
  torch::manual_seed(static_cast<uint64_t>(config.train.seed));
  model_ = Transformer(config.model);
  model_->to(device_);
  optimizer_ = MakeAdamW(*model_, config.train);
  evaluator_ = std::make_unique<Evaluator>(config, data_, device_);
}

at::Tensor Trainer::NextBatch(int64_t seqs) {
  std::vector<std::vector<Token>> rows;
  for (int64_t i = 0; i < seqs; ++i) rows.push_back(train_stream_.Next().tokens);
  return ToTensor(rows, device_);  // (seqs, seq_len + 1)
}

double Trainer::Step(int64_t tokens_after) {
  SetLearningRate(*optimizer_, schedule_.At(tokens_after));
  optimizer_->zero_grad();
  at::Tensor loss_sum = at::zeros({}, at::TensorOptions().device(device_));  // ()
  for (int64_t done = 0; done < seqs_per_step_; done += config_.train.micro_batch) {
    const int64_t n = std::min<int64_t>(config_.train.micro_batch, seqs_per_step_ - done);
    at::Tensor batch = NextBatch(n);                      // (n, T + 1)
    at::Tensor x = batch.narrow(1, 0, batch.size(1) - 1);  // (n, T)
    at::Tensor y = batch.narrow(1, 1, batch.size(1) - 1);  // (n, T)
    at::Tensor loss;
    {
      AutocastScope autocast(bf16_);
      at::Tensor logits = model_(x);  // (n, T, V)
      loss = at::cross_entropy_loss(logits.reshape({-1, logits.size(-1)}), y.reshape({-1}));
    }
    // Weight each micro-batch by its share of the step so the gradient is the step mean.
    (loss * (static_cast<double>(n) / seqs_per_step_)).backward();
    loss_sum += loss.detach() * n;
  }
  if (config_.train.grad_clip > 0) {
    torch::nn::utils::clip_grad_norm_(model_->parameters(), config_.train.grad_clip);
  }
  optimizer_->step();
  return loss_sum.item<double>() / static_cast<double>(seqs_per_step_);
}

TrainResult Trainer::Run() {
  const TrainConfig& tc = config_.train;
  const ParamCounts params = model_->CountParams();
  sink_->Emit({"start", 0, std::nullopt,
               {{"model/params", static_cast<double>(params.total)},
                {"model/non_embedding_params", static_cast<double>(params.non_embedding)}}});
  std::fprintf(stderr, "onset-train: %s %s window=%d pos=%s d_model=%d: %lld params (%lld non-embedding), "
               "%lld tokens/step, budget %lld tokens on %s\n",
               config_.model.arch.c_str(), config_.model.pattern.c_str(), config_.model.window,
               config_.model.pos.c_str(), config_.model.d_model, static_cast<long long>(params.total),
               static_cast<long long>(params.non_embedding), static_cast<long long>(tokens_per_step()),
               static_cast<long long>(tc.tokens), device_.str().c_str());

  const int64_t eval_every = config_.eval.resolved_every_tokens(tc.tokens);
  TrainResult result;
  int64_t tokens = 0, next_eval = eval_every;
  while (tokens < tc.tokens) {
    const auto t0 = Clock::now();
    const double lr = schedule_.At(tokens + tokens_per_step());
    const double loss = Step(tokens + tokens_per_step());
    const double dt = Seconds(Clock::now() - t0);
    tokens += tokens_per_step();
    result.steps += 1;
    result.step_losses.push_back(loss);
    train_seconds_ += dt;
    window_seconds_ += dt;
    window_tokens_ += tokens_per_step();
    window_loss_sum_ += loss;
    window_steps_ += 1;

    if (!std::isfinite(loss)) {
      sink_->Emit({"diverged", tokens, std::nullopt, {{"train/loss", loss}, {"train/lr", lr}}});
      std::fprintf(stderr, "onset-train: diverged at step %lld (%lld tokens): loss %f\n",
                   static_cast<long long>(result.steps), static_cast<long long>(tokens), loss);
      result.outcome = TrainOutcome::kDiverged;
      result.tokens = tokens;
      return result;
    }
    const bool last = tokens >= tc.tokens;
    if (result.steps % tc.log_every_steps == 0 || last) EmitTrain(tokens, result.steps, lr);
    if (tokens >= next_eval || last) {
      Evaluate(tokens);
      while (next_eval <= tokens) next_eval += eval_every;
    }
  }
  result.tokens = tokens;
  const double avg_tps = train_seconds_ > 0 ? tokens / train_seconds_ : 0.0;
  sink_->Emit({"done", tokens, std::nullopt,
               {{"train/tokens_per_second", avg_tps},
                {"train/seconds", train_seconds_},
                {"train/loss", result.step_losses.back()}}});
  std::fprintf(stderr, "onset-train: done, %lld tokens in %.1f s of training (%.0f tokens/s)\n",
               static_cast<long long>(tokens), train_seconds_, avg_tps);
  return result;
}

void Trainer::EmitTrain(int64_t tokens, int64_t step, double lr) {
  // train/loss is the mean over the steps since the previous train event.
  const double mean_loss = window_loss_sum_ / window_steps_;
  const double tps = window_seconds_ > 0 ? window_tokens_ / window_seconds_ : 0.0;
  sink_->Emit({"train", tokens, step,
               {{"train/loss", mean_loss}, {"train/lr", lr}, {"train/tokens_per_second", tps}}});
  std::fprintf(stderr, "step %6lld  tokens %10lld  loss %.4f  lr %.2e  %.0f tok/s\n",
               static_cast<long long>(step), static_cast<long long>(tokens), mean_loss, lr, tps);
  window_seconds_ = 0;
  window_tokens_ = 0;
  window_loss_sum_ = 0;
  window_steps_ = 0;
}

void Trainer::Evaluate(int64_t tokens) {
  const auto t0 = Clock::now();
  std::map<std::string, double> metrics =
      evaluator_->Run(model_, bf16_, /*final_eval=*/tokens >= config_.train.tokens);
  metrics["eval/seconds"] = Seconds(Clock::now() - t0);
  sink_->Emit({"eval", tokens, std::nullopt, metrics});
  std::string line;
  for (const auto& [name, value] : metrics) {
    char buf[96];
    std::snprintf(buf, sizeof buf, " %s=%.4g", name.c_str(), value);
    line += buf;
  }
  std::fprintf(stderr, "eval at %lld tokens:%s\n", static_cast<long long>(tokens), line.c_str());
}

}  // namespace onset::model
