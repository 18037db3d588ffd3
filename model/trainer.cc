#include "model/trainer.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include <torch/nn/utils/clip_grad.h>
#include <torch/utils.h>

#include "model/flops.h"
#include "model/optimizer.h"
#include "model/precision.h"

namespace onset::model {
namespace {

double Seconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

Backgrounds OpenOrThrow(const CellConfig& config) {
  const int train_len = config.model.seq_len + 1;
  int heldout_len = config.eval.heldout_seqs > 0 ? train_len : 0;
  if (config.eval.niah_samples > 0 && !config.eval.niah_depths.empty()) {
    for (int length : config.eval.resolved_niah_lengths(config.model.seq_len)) {
      heldout_len = std::max(heldout_len, length);
    }
  }
  std::string error;
  std::optional<Backgrounds> backgrounds =
      OpenBackgrounds(config.data, train_len, heldout_len, &error);
  if (!backgrounds) throw DataError(error);
  return *std::move(backgrounds);
}

// The first multiple of `every` beyond `tokens`: where a cadence fires next.
int64_t NextMultiple(int64_t tokens, int64_t every) { return (tokens / every + 1) * every; }

}  // namespace

Trainer::Trainer(const CellConfig& config, const at::Device& device, MetricsSink* sink,
                 std::string checkpoint_dir)
    : config_(config),
      device_(device),
      bf16_(device.is_cuda()),
      sink_(sink),
      backgrounds_(OpenOrThrow(config)),
      data_(config.data, config.model.seq_len, backgrounds_.train),
      heldout_data_(config.data, config.model.seq_len, backgrounds_.heldout),
      train_stream_(&data_, MixSeed(static_cast<uint64_t>(config.train.seed), kTrainStream),
                    config.model.seq_len + 1),
      schedule_(LrSchedule::FromConfig(config.train)),
      seqs_per_step_(std::max<int64_t>(1, config.train.batch_tokens / config.model.seq_len)),
      checkpoint_dir_(std::move(checkpoint_dir)) {
  torch::manual_seed(static_cast<uint64_t>(config.train.seed));
  model_ = Transformer(config.model);
  model_->to(device_);
  flops_per_token_ = TrainFlopsPerToken(config.model, model_->CountParams().non_embedding);
  optimizer_ = MakeAdamW(*model_, config.train);
  evaluator_ = std::make_unique<Evaluator>(config, heldout_data_, device_);
  for (int64_t at : config.train.keep_checkpoints_at) {
    keep_tokens_.insert((at + tokens_per_step() - 1) / tokens_per_step() * tokens_per_step());
  }
}

TrainResult Trainer::Run() {
  const TrainConfig& tc = config_.train;
  const int64_t checkpoint_every = tc.resolved_checkpoint_every_tokens();
  int64_t next_eval = config_.eval.NextEvalAfter(tokens_, tc.tokens);
  int64_t next_checkpoint = NextMultiple(tokens_, checkpoint_every);
  EmitStart();
  TrainResult result;
  while (tokens_ < tc.tokens) {
    const double lr = schedule_.At(tokens_ + tokens_per_step());
    const double loss = Step(lr);
    result.step_losses.push_back(loss);
    if (!std::isfinite(loss)) return Diverged(std::move(result), loss, lr);

    const bool last = tokens_ >= tc.tokens;
    if (steps_ % tc.log_every_steps == 0 || last) EmitTrain(lr);
    if (tokens_ >= next_eval || last) {
      Evaluate();
      next_eval = config_.eval.NextEvalAfter(tokens_, tc.tokens);
    }
    if (tokens_ >= next_checkpoint || keep_tokens_.count(tokens_) || last) {
      WriteCheckpoint();
      next_checkpoint = NextMultiple(tokens_, checkpoint_every);
    }
  }
  return Finish(std::move(result));
}

at::Tensor Trainer::NextBatch(int64_t seqs) {
  std::vector<std::vector<Token>> rows;
  for (int64_t i = 0; i < seqs; ++i) rows.push_back(train_stream_.Next().tokens);
  return ToTensor(rows, device_);  // (seqs, seq_len + 1)
}

double Trainer::Step(double lr) {
  const auto t0 = Clock::now();
  SetLearningRate(*optimizer_, lr);
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
  const double loss = loss_sum.item<double>() / static_cast<double>(seqs_per_step_);

  const double dt = Seconds(Clock::now() - t0);
  tokens_ += tokens_per_step();
  steps_ += 1;
  train_seconds_ += dt;
  window_seconds_ += dt;
  window_tokens_ += tokens_per_step();
  window_loss_sum_ += loss;
  window_steps_ += 1;
  return loss;
}

void Trainer::EmitStart() {
  const ParamCounts params = model_->CountParams();
  sink_->Emit({"start", 0, std::nullopt,
               {{"model/params", static_cast<double>(params.total)},
                {"model/non_embedding_params", static_cast<double>(params.non_embedding)}}});
  if (resumed_) sink_->Emit({"resume", tokens_, std::nullopt, {}});
  std::fprintf(stderr, "onset-train: %s %s window=%d pos=%s d_model=%d: %lld params (%lld non-embedding), "
               "%lld tokens/step, budget %lld tokens on %s\n",
               config_.model.arch.c_str(), config_.model.pattern.c_str(), config_.model.window,
               config_.model.pos.c_str(), config_.model.d_model, static_cast<long long>(params.total),
               static_cast<long long>(params.non_embedding), static_cast<long long>(tokens_per_step()),
               static_cast<long long>(config_.train.tokens), device_.str().c_str());
}

TrainResult Trainer::Diverged(TrainResult result, double loss, double lr) {
  sink_->Emit({"diverged", tokens_, std::nullopt, {{"train/loss", loss}, {"train/lr", lr}}});
  std::fprintf(stderr, "onset-train: diverged at step %lld (%lld tokens): loss %f\n",
               static_cast<long long>(steps_), static_cast<long long>(tokens_), loss);
  result.outcome = TrainOutcome::kDiverged;
  result.tokens = tokens_;
  result.steps = steps_;
  return result;
}

TrainResult Trainer::Finish(TrainResult result) {
  result.tokens = tokens_;
  result.steps = steps_;
  const double avg_tps = train_seconds_ > 0 ? tokens_ / train_seconds_ : 0.0;
  MetricsEvent done{"done", tokens_, std::nullopt,
                    {{"train/tokens_per_second", avg_tps}, {"train/seconds", train_seconds_}}};
  AddMfu(avg_tps, &done.metrics);
  // A run resumed from its final checkpoint takes no step and has no loss of its own to add.
  if (!result.step_losses.empty()) done.metrics["train/loss"] = result.step_losses.back();
  sink_->Emit(done);
  std::fprintf(stderr, "onset-train: done, %lld tokens in %.1f s of training (%.0f tokens/s)\n",
               static_cast<long long>(tokens_), train_seconds_, avg_tps);
  return result;
}

void Trainer::EmitTrain(double lr) {
  // train/loss is the mean over the steps since the previous train event.
  const double mean_loss = window_loss_sum_ / window_steps_;
  const double tps = window_seconds_ > 0 ? window_tokens_ / window_seconds_ : 0.0;
  MetricsEvent event{"train", tokens_, steps_,
                     {{"train/loss", mean_loss}, {"train/lr", lr}, {"train/tokens_per_second", tps}}};
  AddMfu(tps, &event.metrics);
  sink_->Emit(event);
  std::fprintf(stderr, "step %6lld  tokens %10lld  loss %.4f  lr %.2e  %.0f tok/s\n",
               static_cast<long long>(steps_), static_cast<long long>(tokens_), mean_loss, lr, tps);
  window_seconds_ = 0;
  window_tokens_ = 0;
  window_loss_sum_ = 0;
  window_steps_ = 0;
}

void Trainer::AddMfu(double tokens_per_second, std::map<std::string, double>* metrics) const {
  if (peak_flops_ <= 0 || tokens_per_second <= 0) return;
  (*metrics)["train/mfu"] = tokens_per_second * flops_per_token_ / peak_flops_;
}

void Trainer::WriteCheckpoint() {
  if (checkpoint_dir_.empty()) return;
  const auto t0 = Clock::now();
  const TrainProgress progress{tokens_,          steps_,         train_stream_.position(),
                               train_seconds_,   window_loss_sum_, window_steps_,
                               window_tokens_,   window_seconds_};
  const int64_t bytes =
      SaveCheckpoint(checkpoint_dir_, config_, progress, *model_, *optimizer_, device_);
  PruneCheckpoints(checkpoint_dir_, config_.train.keep_checkpoints, keep_tokens_);
  const double seconds = Seconds(Clock::now() - t0);
  sink_->Emit({"checkpoint", tokens_, std::nullopt,
               {{"checkpoint/seconds", seconds},
                {"checkpoint/bytes", static_cast<double>(bytes)}}});
  std::fprintf(stderr, "checkpoint at %lld tokens: %s/%s, %lld bytes in %.2f s\n",
               static_cast<long long>(tokens_), checkpoint_dir_.c_str(),
               CheckpointFileName(tokens_).c_str(), static_cast<long long>(bytes), seconds);
}

std::optional<std::string> Trainer::Resume() {
  const std::vector<CheckpointFile> files = ListCheckpoints(checkpoint_dir_);
  for (auto it = files.rbegin(); it != files.rend(); ++it) {
    TrainProgress p;
    auto error =
        LoadCheckpoint(it->path, config_, device_, &p, model_.ptr().get(), optimizer_.get());
    if (error && error->kind == CheckpointError::Kind::kOtherConfig) return error->message;
    if (error) {
      std::fprintf(stderr, "onset-train: %s, skipping\n", error->message.c_str());
      continue;
    }
    tokens_ = p.tokens;
    steps_ = p.steps;
    train_stream_.Seek(p.data_position);
    train_seconds_ = p.train_seconds;
    window_loss_sum_ = p.window_loss_sum;
    window_steps_ = static_cast<int>(p.window_steps);
    window_tokens_ = p.window_tokens;
    window_seconds_ = p.window_seconds;
    resumed_ = true;
    std::fprintf(stderr, "onset-train: resuming from %s at %lld tokens (step %lld)\n",
                 it->path.c_str(), static_cast<long long>(tokens_), static_cast<long long>(steps_));
    return std::nullopt;
  }
  std::fprintf(stderr, "onset-train: no valid checkpoint in %s, starting fresh\n",
               checkpoint_dir_.empty() ? "(no checkpoint directory)" : checkpoint_dir_.c_str());
  return std::nullopt;
}

void Trainer::Evaluate() {
  const auto t0 = Clock::now();
  std::map<std::string, double> metrics =
      evaluator_->Run(model_, bf16_, /*final_eval=*/tokens_ >= config_.train.tokens);
  metrics["eval/seconds"] = Seconds(Clock::now() - t0);
  sink_->Emit({"eval", tokens_, std::nullopt, metrics});
  std::string line;
  for (const auto& [name, value] : metrics) {
    char buf[96];
    std::snprintf(buf, sizeof buf, " %s=%.4g", name.c_str(), value);
    line += buf;
  }
  std::fprintf(stderr, "eval at %lld tokens:%s\n", static_cast<long long>(tokens_), line.c_str());
}

}  // namespace onset::model
