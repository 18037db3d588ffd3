#include "model/training/trainer.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include <torch/nn/utils/clip_grad.h>
#include <torch/utils.h>

#include "model/config/flops.h"
#include "model/training/optimizer.h"
#include "model/nn/precision.h"
#include "model/training/stop_request.h"

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
                 std::string checkpoint_dir, Collective* collective)
    : config_(config),
      device_(device),
      bf16_(config.train.precision == "bf16"),
      collective_(collective != nullptr ? collective : &single_process_),
      sink_(lead() ? sink : &dropped_),
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
  if (lead()) evaluator_ = std::make_unique<Evaluator>(config, heldout_data_, device_);
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
  BroadcastState();
  TrainResult result;
  while (tokens_ < tc.tokens) {
    const double lr = schedule_.At(tokens_ + tokens_per_step());
    const double loss = Step(lr);  // the same on every rank
    result.step_losses.push_back(loss);
    if (!std::isfinite(loss)) return Diverged(std::move(result), loss, lr);

    const bool last = tokens_ >= tc.tokens;
    if (steps_ % tc.log_every_steps == 0 || last) EmitTrain(lr);
    const bool eval_due = tokens_ >= next_eval || last;
    const bool checkpoint_due = tokens_ >= next_checkpoint || keep_tokens_.count(tokens_) || last;
    if (eval_due) {
      if (lead()) Evaluate();
      next_eval = config_.eval.NextEvalAfter(tokens_, tc.tokens);
    }
    if (checkpoint_due) {
      if (lead()) WriteCheckpoint();
      next_checkpoint = NextMultiple(tokens_, checkpoint_every);
    }
    // The other ranks wait here, and not in the next step's all-reduce, while rank 0 works.
    if ((eval_due || checkpoint_due) && distributed()) collective_->Barrier();
    if (!last && StopAgreed()) return Stopped(std::move(result), checkpoint_due);
  }
  return Finish(std::move(result));
}

bool Trainer::StopAgreed() {
  if (!distributed()) return StopRequested();
  // Ranks receive the signal at different moments; they must stop after the same step.
  at::Tensor flag = at::full({1}, StopRequested() ? 1.0f : 0.0f,
                             at::TensorOptions().dtype(at::kFloat).device(device_));  // (1,)
  collective_->AllReduceSum(flag);
  return flag.item<float>() > 0;
}

TrainResult Trainer::Stopped(TrainResult result, bool checkpointed) {
  if (!checkpointed && lead()) WriteCheckpoint();
  if (distributed()) collective_->Barrier();
  sink_->Emit({"stopped", tokens_, std::nullopt, {}});
  if (lead()) {
    std::fprintf(stderr, "onset-train: stopped on request at %lld tokens (step %lld); resume "
                 "with --resume\n", static_cast<long long>(tokens_),
                 static_cast<long long>(steps_));
  }
  result.outcome = TrainOutcome::kStopped;
  result.tokens = tokens_;
  result.steps = steps_;
  return result;
}

at::Tensor Trainer::NextBatch(int64_t seqs) {
  std::vector<std::vector<Token>> rows;
  for (int64_t i = 0; i < seqs; ++i) rows.push_back(train_stream_.Next().tokens);
  return ToTensor(rows, device_);  // (seqs, seq_len + 1)
}

void Trainer::BroadcastState() {
  // Ranks build the same model from the same seed, or load the same checkpoint; this makes
  // sure of it, as DDP does, before the first step.
  if (!distributed()) return;
  at::NoGradGuard no_grad;
  for (const at::Tensor& t : model_->parameters()) collective_->Broadcast(t, 0);
  for (const at::Tensor& t : model_->buffers()) collective_->Broadcast(t, 0);
}

double Trainer::Step(double lr) {
  const auto t0 = Clock::now();
  SetLearningRate(*optimizer_, lr);
  optimizer_->zero_grad();
  // This rank's share of the step: sequences [first, end) of seqs_per_step_.
  const int64_t world = collective_->world_size(), rank = collective_->rank();
  const int64_t first = seqs_per_step_ * rank / world;
  const int64_t end = seqs_per_step_ * (rank + 1) / world;
  train_stream_.Seek(next_sequence_ + first);
  next_sequence_ += seqs_per_step_;
  at::Tensor loss_sum = at::zeros({}, at::TensorOptions().device(device_));  // ()
  for (int64_t done = first; done < end; done += config_.train.micro_batch) {
    const int64_t n = std::min<int64_t>(config_.train.micro_batch, end - done);
    at::Tensor batch = NextBatch(n);                       // (n, T + 1)
    at::Tensor x = batch.narrow(1, 0, batch.size(1) - 1);  // (n, T)
    at::Tensor y = batch.narrow(1, 1, batch.size(1) - 1);  // (n, T)
    at::Tensor loss;
    {
      AutocastScope autocast(bf16_, device_.type());
      at::Tensor logits = model_(x);  // (n, T, V)
      loss = at::cross_entropy_loss(logits.reshape({-1, logits.size(-1)}), y.reshape({-1}));
    }
    // Weight each micro-batch by its share of the step so the gradient is the step mean.
    (loss * (static_cast<double>(n) / seqs_per_step_)).backward();
    loss_sum += loss.detach() * n;
  }
  if (distributed()) SumOverRanks(loss_sum);
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

void Trainer::SumOverRanks(const at::Tensor& loss_sum) {
  // A parameter has a gradient on a rank once that rank back-propagated through it; a rank
  // with no sequences this step has none. The flags keep the one-process semantics: a
  // parameter no rank reached keeps no gradient (the optimizer skips it), one any rank reached
  // gets the sum, taking zeros for the ranks that did not.
  std::vector<at::Tensor> params = model_->parameters();
  std::vector<float> flags(params.size(), 0.0f);
  for (size_t i = 0; i < params.size(); ++i) {
    if (params[i].grad().defined()) {
      flags[i] = 1.0f;
    } else {
      params[i].mutable_grad() = at::zeros_like(params[i]);
    }
  }
  at::Tensor reached = at::tensor(flags).to(device_);  // (P,) float
  std::vector<at::Tensor> tensors;
  for (const at::Tensor& p : params) tensors.push_back(p.grad());
  tensors.push_back(loss_sum);
  tensors.push_back(reached);
  AllReduceSumFlat(*collective_, tensors);
  at::Tensor ranks_reached = reached.cpu();  // (P,) float: how many ranks reached each
  const float* count = ranks_reached.data_ptr<float>();
  for (size_t i = 0; i < params.size(); ++i) {
    if (count[i] == 0) params[i].mutable_grad() = at::Tensor();
  }
}


void Trainer::EmitStart() {
  const ParamCounts params = model_->CountParams();
  sink_->Emit({"start", 0, std::nullopt,
               {{"model/params", static_cast<double>(params.total)},
                {"model/non_embedding_params", static_cast<double>(params.non_embedding)}}});
  if (resumed_) {
    // Recorded as a metric too, so the database shows where each resumption started.
    sink_->Emit({"resume", tokens_, std::nullopt,
                 {{"train/resumed_at_tokens", static_cast<double>(tokens_)}}});
    // What the stopped run had reported, once more: its last deliveries may have been lost.
    size_t begin = 0;
    while (begin < reported_.size()) {
      size_t end = reported_.find('\n', begin);
      if (end == std::string::npos) end = reported_.size();
      if (auto e = MetricsEvent::Parse(reported_.substr(begin, end - begin))) {
        sink_->Emit(*e);
      }
      begin = end + 1;
    }
  }
  if (!lead()) return;
  std::fprintf(stderr, "onset-train: %s %s window=%d pos=%s d_model=%d: %lld params (%lld non-embedding), "
               "%lld tokens/step, budget %lld tokens on %s\n",
               config_.model.arch.c_str(), config_.model.pattern.c_str(), config_.model.window,
               config_.model.pos.c_str(), config_.model.d_model, static_cast<long long>(params.total),
               static_cast<long long>(params.non_embedding), static_cast<long long>(tokens_per_step()),
               static_cast<long long>(config_.train.tokens), device_.str().c_str());
  if (distributed()) {
    std::fprintf(stderr, "onset-train: data parallel over %d ranks, %lld sequences per step\n",
                 collective_->world_size(), static_cast<long long>(seqs_per_step_));
  }
}

TrainResult Trainer::Diverged(TrainResult result, double loss, double lr) {
  sink_->Emit({"diverged", tokens_, std::nullopt, {{"train/loss", loss}, {"train/lr", lr}}});
  if (lead()) {
    std::fprintf(stderr, "onset-train: diverged at step %lld (%lld tokens): loss %f\n",
                 static_cast<long long>(steps_), static_cast<long long>(tokens_), loss);
  }
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
  if (lead()) {
    std::fprintf(stderr, "onset-train: done, %lld tokens in %.1f s of training (%.0f tokens/s)\n",
                 static_cast<long long>(tokens_), train_seconds_, avg_tps);
  }
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
  reported_ += event.Format() + "\n";
  if (lead()) {
    std::fprintf(stderr, "step %6lld  tokens %10lld  loss %.4f  lr %.2e  %.0f tok/s\n",
                 static_cast<long long>(steps_), static_cast<long long>(tokens_), mean_loss, lr,
                 tps);
  }
  window_seconds_ = 0;
  window_tokens_ = 0;
  window_loss_sum_ = 0;
  window_steps_ = 0;
}

void Trainer::AddMfu(double tokens_per_second, std::map<std::string, double>* metrics) const {
  if (peak_flops_ <= 0 || tokens_per_second <= 0) return;
  // tokens_per_second counts every rank's tokens; each rank has a device of peak_flops_.
  (*metrics)["train/mfu"] =
      tokens_per_second * flops_per_token_ / (peak_flops_ * collective_->world_size());
}

void Trainer::WriteCheckpoint() {
  if (checkpoint_dir_.empty()) return;
  const auto t0 = Clock::now();
  const TrainProgress progress{tokens_,        steps_,           next_sequence_,
                               train_seconds_, window_loss_sum_, window_steps_,
                               window_tokens_, window_seconds_,  reported_};
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
  int64_t chosen = -1;
  std::optional<std::string> error;
  if (lead()) error = ResumeNewest(&chosen);
  if (!distributed()) return error;

  // Rank 0 alone looks through the directory, skipping damaged files; the others load the file
  // it settled on, so ranks cannot settle on different ones.
  enum Decision : int64_t { kFresh = 0, kLoaded = 1, kRefused = 2 };
  const int64_t decision = error ? kRefused : chosen >= 0 ? kLoaded : kFresh;
  at::Tensor message = at::tensor(std::vector<int64_t>{decision, chosen}).to(device_);  // (2,)
  collective_->Broadcast(message, 0);
  message = message.cpu();
  if (!lead()) {
    const int64_t tokens = message[1].item<int64_t>();
    switch (message[0].item<int64_t>()) {
      case kRefused:
        error = "rank 0 could not resume (its message says why)";
        break;
      case kLoaded:
        error = ResumeFrom(checkpoint_dir_ + "/" + CheckpointFileName(tokens));
        break;
      default:
        break;
    }
  }
  // Go on only if every rank restored the same state.
  at::Tensor failed = at::full({1}, error ? 1.0f : 0.0f, at::TensorOptions().device(device_));
  collective_->AllReduceSum(failed);  // (1,): ranks that failed
  if (!error && failed.item<float>() > 0) {
    error = "another rank could not load the checkpoint rank 0 chose (its message says why)";
  }
  return error;
}

std::optional<std::string> Trainer::ResumeNewest(int64_t* chosen) {
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
    Restore(p);
    *chosen = p.tokens;
    std::fprintf(stderr, "onset-train: resuming from %s at %lld tokens (step %lld)\n",
                 it->path.c_str(), static_cast<long long>(tokens_), static_cast<long long>(steps_));
    return std::nullopt;
  }
  std::fprintf(stderr, "onset-train: no valid checkpoint in %s, starting fresh\n",
               checkpoint_dir_.empty() ? "(no checkpoint directory)" : checkpoint_dir_.c_str());
  return std::nullopt;
}

std::optional<std::string> Trainer::ResumeFrom(const std::string& path) {
  TrainProgress p;
  auto error = LoadCheckpoint(path, config_, device_, &p, model_.ptr().get(), optimizer_.get());
  if (error) return error->message;
  Restore(p);
  return std::nullopt;
}

void Trainer::Restore(const TrainProgress& p) {
  tokens_ = p.tokens;
  steps_ = p.steps;
  next_sequence_ = p.data_position;
  train_seconds_ = p.train_seconds;
  window_loss_sum_ = p.window_loss_sum;
  window_steps_ = static_cast<int>(p.window_steps);
  window_tokens_ = p.window_tokens;
  window_seconds_ = p.window_seconds;
  reported_ = p.reported;
  resumed_ = true;
}

void Trainer::Evaluate() {
  const auto t0 = Clock::now();
  std::map<std::string, double> metrics =
      evaluator_->Run(model_, bf16_, /*final_eval=*/tokens_ >= config_.train.tokens);
  metrics["eval/seconds"] = Seconds(Clock::now() - t0);
  const MetricsEvent event{"eval", tokens_, std::nullopt, metrics};
  sink_->Emit(event);
  reported_ += event.Format() + "\n";
  std::string line;
  for (const auto& [name, value] : metrics) {
    char buf[96];
    std::snprintf(buf, sizeof buf, " %s=%.4g", name.c_str(), value);
    line += buf;
  }
  std::fprintf(stderr, "eval at %lld tokens:%s\n", static_cast<long long>(tokens_), line.c_str());
}

}  // namespace onset::model
