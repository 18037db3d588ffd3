#include "model/training/trainer.h"

#include <ATen/record_function.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include <torch/nn/utils/clip_grad.h>
#include <torch/utils.h>

#include "base/metric_names.h"
#include "model/config/flops.h"
#include "model/nn/precision.h"
#include "model/training/memory_peak.h"
#include "model/training/optimizer.h"
#include "model/training/stop_request.h"

namespace onset::model {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// The global L2 norm of the parameters' gradients, as clip_grad_norm_ measures it, changing
// nothing.
double GradientNorm(const std::vector<at::Tensor>& parameters) {
  std::vector<at::Tensor> norms;
  for (const at::Tensor& p : parameters) {
    if (p.grad().defined()) norms.push_back(p.grad().norm(2));
  }
  if (norms.empty()) return 0;
  return at::stack(norms).norm(2).item<double>();
}

Backgrounds OpenOrThrow(const CellConfig& config) {
  std::string error;
  std::optional<Backgrounds> backgrounds = OpenCellBackgrounds(config, &error);
  if (!backgrounds) throw DataError(error);
  return *std::move(backgrounds);
}

}  // namespace

Trainer::Trainer(const CellConfig& config, const at::Device& device, MetricsSink* sink,
                 std::string checkpoint_dir, Collective* collective)
    : Trainer(config, CellSpan(config), device, sink, std::move(checkpoint_dir), collective) {}

Trainer::Trainer(const TrunkSpec& trunk, const at::Device& device, MetricsSink* sink,
                 std::string checkpoint_dir, Collective* collective)
    : Trainer(trunk.cell, TrunkSpan(trunk), device, sink, std::move(checkpoint_dir), collective) {}

Trainer::Trainer(const CellConfig& config, std::unique_ptr<RunSpan> span, const at::Device& device,
                 MetricsSink* sink, std::string checkpoint_dir, Collective* collective)
    : config_(config),
      device_(device),
      bf16_(config.train.precision == "bf16"),
      parallel_(collective, device),
      sink_(lead() ? sink : &dropped_),
      backgrounds_(OpenOrThrow(config)),
      data_(config.data, config.model.seq_len, backgrounds_.train),
      heldout_data_(config.data, config.model.seq_len, backgrounds_.heldout),
      train_stream_(&data_, MixSeed(static_cast<uint64_t>(config.train.seed), kTrainStream),
                    config.model.seq_len + 1),
      schedule_(span->Schedule()),
      seqs_per_step_(std::max<int64_t>(1, config.train.batch_tokens / config.model.seq_len)),
      checkpoints_(std::move(checkpoint_dir), config, tokens_per_step(), device),
      span_(std::move(span)) {
  span_->Configure(&checkpoints_);
  torch::manual_seed(static_cast<uint64_t>(config.train.seed));
  model_ = Transformer(config.model);
  model_->to(device_);
  throughput_ = Throughput(TrainFlopsPerToken(config.model, model_->CountParams().non_embedding),
                           parallel_.world_size());
  optimizer_ = MakeAdamW(*model_, config.train);
  if (lead()) evaluator_ = std::make_unique<Evaluator>(config, heldout_data_, device_);
}

TrainResult Trainer::Run() {
  const TrainConfig& tc = config_.train;
  const int64_t end = span_->end_tokens();
  int64_t next_eval = config_.eval.NextEvalAfter(tokens_, tc.tokens);
  checkpoints_.ScheduleAfter(tokens_);
  EmitStart();
  parallel_.BroadcastModel(*model_);
  TrainResult result;
  while (tokens_ < end) {
    const double lr = schedule_.At(tokens_ + tokens_per_step());
    const double loss = Step(lr);  // the same on every rank
    result.step_losses.push_back(loss);
    if (!std::isfinite(loss)) return Diverged(std::move(result), loss, lr);

    const bool last = tokens_ >= end;
    if (steps_ % tc.log_every_steps == 0 || (last && span_->TrainEventAtEnd())) EmitTrain(lr);
    const bool eval_due = span_->EvalDue(tokens_, next_eval, last);
    const bool checkpoint_due = checkpoints_.Due(tokens_, last);
    if (eval_due) {
      if (lead()) Evaluate();
      next_eval = config_.eval.NextEvalAfter(tokens_, tc.tokens);
    }
    if (checkpoint_due) {
      if (lead()) WriteCheckpoint();
      checkpoints_.ScheduleAfter(tokens_);
    }
    // The other ranks wait here, and not in the next step's all-reduce, while rank 0 works.
    if (eval_due || checkpoint_due) parallel_.Barrier();
    // Ranks receive a stop signal at different moments; they must stop after the same step.
    if (!last && parallel_.AnyRank(StopRequested())) {
      return Stopped(std::move(result), checkpoint_due);
    }
  }
  return Finish(std::move(result));
}

double Trainer::Step(double lr) {
  const auto t0 = Clock::now();
  SetLearningRate(*optimizer_, lr);
  optimizer_->zero_grad();
  const DataParallel::Share share = parallel_.ShareOf(seqs_per_step_);  // this rank's sequences
  train_stream_.Seek(next_sequence_ + share.first);
  next_sequence_ += seqs_per_step_;
  at::Tensor loss_sum = at::zeros({}, at::TensorOptions().device(device_));  // ()
  for (int64_t done = share.first; done < share.end; done += config_.train.micro_batch) {
    const int64_t n = std::min<int64_t>(config_.train.micro_batch, share.end - done);
    at::Tensor weights;  // (n, T) or undefined
    at::Tensor batch;    // (n, T + 1)
    {
      RECORD_USER_SCOPE("step/data");
      batch = NextBatch(n, &weights);
    }
    at::Tensor x = batch.narrow(1, 0, batch.size(1) - 1);  // (n, T)
    at::Tensor y = batch.narrow(1, 1, batch.size(1) - 1);  // (n, T)
    at::Tensor loss, objective;
    {
      RECORD_USER_SCOPE("step/forward");
      AutocastScope autocast(bf16_, device_.type());
      at::Tensor logits = model_(x);  // (n, T, V)
      if (!weights.defined()) {
        loss = at::cross_entropy_loss(logits.reshape({-1, logits.size(-1)}), y.reshape({-1}));
        objective = loss;
      } else {
        at::Tensor per_target = at::cross_entropy_loss(logits.reshape({-1, logits.size(-1)}),
                                                       y.reshape({-1}), /*weight=*/{},
                                                       at::Reduction::None);  // (n T)
        loss = per_target.mean();
        at::Tensor w = weights.reshape({-1});          // (n T)
        objective = (per_target * w).sum() / w.sum();  // the weighted mean
      }
    }
    {
      // Weight each micro-batch by its share of the step so the gradient is the step mean.
      RECORD_USER_SCOPE("step/backward");
      (objective * (static_cast<double>(n) / seqs_per_step_)).backward();
    }
    loss_sum += loss.detach() * n;
  }
  parallel_.SumGradients(model_->parameters(), loss_sum);
  const bool reports = (steps_ + 1) % config_.train.log_every_steps == 0;
  {
    RECORD_USER_SCOPE("step/clip");
    ClipOrMeasureGradients(reports);
  }
  {
    RECORD_USER_SCOPE("step/optimizer");
    optimizer_->step();
  }
  const double loss = loss_sum.item<double>() / static_cast<double>(seqs_per_step_);

  tokens_ += tokens_per_step();
  steps_ += 1;
  throughput_.AddStep(Seconds(Clock::now() - t0), tokens_per_step(), loss);
  return loss;
}

void Trainer::ClipOrMeasureGradients(bool reports) {
  // train/grad_norm: measured when clipping measures it anyway, else only on the steps that
  // report it (a norm costs a device sync), never changing the gradients.
  if (config_.train.grad_clip > 0) {
    grad_norm_ = torch::nn::utils::clip_grad_norm_(model_->parameters(), config_.train.grad_clip);
    grad_norm_step_ = steps_ + 1;
  } else if (reports) {
    grad_norm_ = GradientNorm(model_->parameters());
    grad_norm_step_ = steps_ + 1;
  }
}

at::Tensor Trainer::NextBatch(int64_t seqs, at::Tensor* weights) {
  const double answer_weight = config_.train.answer_loss_weight;
  const int64_t T = config_.model.seq_len;
  std::vector<std::vector<Token>> rows;
  std::vector<float> w;
  for (int64_t i = 0; i < seqs; ++i) {
    Sequence seq = train_stream_.Next();
    if (answer_weight != 1.0) {
      const std::vector<bool> answer = AnswerTokens(seq, config_.data);
      for (int64_t t = 0; t < T; ++t) {  // target t predicts token t + 1
        w.push_back(answer[t + 1] ? static_cast<float>(answer_weight) : 1.0f);
      }
    }
    rows.push_back(std::move(seq.tokens));
  }
  if (answer_weight != 1.0) *weights = at::tensor(w).view({seqs, T}).to(device_);  // (seqs, T)
  return ToTensor(rows, device_);  // (seqs, seq_len + 1)
}

TrainProgress Trainer::Progress() const {
  TrainProgress p;
  p.tokens = tokens_;
  p.steps = steps_;
  p.data_position = next_sequence_;
  p.reported = reported_;
  throughput_.SaveTo(&p);
  return p;
}

void Trainer::Restore(const TrainProgress& p) {
  tokens_ = p.tokens;
  steps_ = p.steps;
  next_sequence_ = p.data_position;
  reported_ = p.reported;
  throughput_.RestoreFrom(p);
  resumed_ = true;
}

std::optional<std::string> Trainer::Resume() { return Start({}); }

std::optional<std::string> Trainer::StartBranch(const std::string& trunk_file, bool resume) {
  StartFrom from;
  from.own = resume;
  from.branch_from = trunk_file;
  return Start(from);
}

std::optional<std::string> Trainer::Start(const StartFrom& from) {
  CheckpointManager::Resumed resumed =
      checkpoints_.Resume(parallel_, model_.ptr().get(), optimizer_.get(), from);
  if (resumed.progress) Restore(*resumed.progress);
  report_start_ = !from.files.empty();
  if (!resumed.file.empty()) {
    const std::string dir = std::filesystem::path(resumed.file).parent_path().string();
    if (dir != checkpoints_.dir()) resumed_dir_ = dir;
  }
  return resumed.error;
}

void Trainer::EmitStart() {
  const ParamCounts params = model_->CountParams();
  Report({trainer::kEventStart,
          0,
          std::nullopt,
          {{metric::kModelParams, static_cast<double>(params.total)},
           {metric::kModelNonEmbeddingParams, static_cast<double>(params.non_embedding)}}});
  if (resumed_ || report_start_) {
    // Recorded as a metric too, so the database shows where each resumption started (and the
    // coordinator keeps only what this run's lineage reported up to there).
    Report({trainer::kEventResume,
            tokens_,
            std::nullopt,
            {{metric::kTrainResumedAtTokens, static_cast<double>(tokens_)}}});
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
  AnnounceBranchPoints();
  if (!lead()) return;
  std::fprintf(stderr,
               "onset-train: %s %s window=%d pos=%s d_model=%d: %lld params (%lld non-embedding), "
               "%lld tokens/step, %s %lld tokens on %s\n",
               config_.model.arch.c_str(), config_.model.pattern.c_str(), config_.model.window,
               config_.model.pos.c_str(), config_.model.d_model,
               static_cast<long long>(params.total), static_cast<long long>(params.non_embedding),
               static_cast<long long>(tokens_per_step()), span_->end_name(),
               static_cast<long long>(span_->end_tokens()), device_.str().c_str());
  if (parallel_.distributed()) {
    std::fprintf(stderr, "onset-train: data parallel over %d ranks, %lld sequences per step\n",
                 parallel_.world_size(), static_cast<long long>(seqs_per_step_));
  }
}

void Trainer::AnnounceBranchPoints() {
  // Its branches wait for these events; an attempt that died may have taken one with it. A
  // branch point in the directory of the checkpoint this run resumed (another attempt's) is
  // linked into its own, so that what it announces is in its own directory.
  if (!lead() || checkpoints_.dir().empty()) return;
  for (int64_t at : span_->branch_points()) {
    if (at > tokens_) break;
    if (!resumed_dir_.empty() && !CheckpointFileBytes(checkpoints_.dir(), at)) {
      LinkCheckpoint(resumed_dir_, checkpoints_.dir(), at);
    }
    if (std::optional<int64_t> bytes = CheckpointFileBytes(checkpoints_.dir(), at)) {
      Report({trainer::kEventCheckpoint,
              at,
              std::nullopt,
              {{metric::kCheckpointBytes, static_cast<double>(*bytes)}}});
    }
  }
}

void Trainer::Report(MetricsEvent event, bool keep) {
  event.at_unix_ms = wall_clock_();
  sink_->Emit(event);
  if (keep) reported_ += event.Format() + "\n";
}

void Trainer::EmitTrain(double lr) {
  // train/loss is the mean over the steps since the previous train event.
  MetricsEvent event{trainer::kEventTrain, tokens_, steps_, throughput_.TakeWindow()};
  event.metrics[metric::kTrainLr] = lr;
  if (grad_norm_step_ == steps_) event.metrics[metric::kTrainGradNorm] = grad_norm_;
  if (std::optional<int64_t> rss = PeakRssBytes()) {
    event.metrics[metric::kTrainPeakRssBytes] = static_cast<double>(*rss);
  }
  if (std::optional<int64_t> cuda = PeakCudaAllocatedBytes(device_)) {
    event.metrics[metric::kTrainPeakCudaBytes] = static_cast<double>(*cuda);
  }
  Report(event, /*keep=*/true);
  if (lead()) {
    std::fprintf(stderr, "step %6lld  tokens %10lld  loss %.4f  lr %.2e  %.0f tok/s\n",
                 static_cast<long long>(steps_), static_cast<long long>(tokens_),
                 event.metrics.at(metric::kTrainLoss), lr,
                 event.metrics.at(metric::kTrainTokensPerSecond));
  }
}

void Trainer::Evaluate() {
  RECORD_USER_SCOPE("eval");
  const auto t0 = Clock::now();
  std::map<std::string, double> metrics =
      evaluator_->Run(model_, bf16_, /*final_eval=*/span_->FinalEval(tokens_));
  metrics[metric::kEvalSeconds] = Seconds(Clock::now() - t0);
  const MetricsEvent event{trainer::kEventEval, tokens_, std::nullopt, metrics};
  Report(event, /*keep=*/true);
  std::string line;
  for (const auto& [name, value] : metrics) {
    char buf[96];
    std::snprintf(buf, sizeof buf, " %s=%.4g", name.c_str(), value);
    line += buf;
  }
  std::fprintf(stderr, "eval at %lld tokens:%s\n", static_cast<long long>(tokens_), line.c_str());
}

void Trainer::WriteCheckpoint() {
  const std::optional<CheckpointManager::Saved> saved =
      checkpoints_.Save(Progress(), *model_, *optimizer_);
  if (!saved) return;  // no checkpoint directory
  Report({trainer::kEventCheckpoint,
          tokens_,
          std::nullopt,
          {{metric::kCheckpointSeconds, saved->seconds},
           {metric::kCheckpointBytes, static_cast<double>(saved->bytes)}}});
  std::fprintf(stderr, "checkpoint at %lld tokens: %s, %lld bytes in %.2f s\n",
               static_cast<long long>(tokens_), saved->path.c_str(),
               static_cast<long long>(saved->bytes), saved->seconds);
}

TrainResult Trainer::Finish(TrainResult result) {
  result.tokens = tokens_;
  result.steps = steps_;
  // No train/loss here: the last train event (at these tokens, but for a trunk) has it as the
  // mean over its window like every other point, and a run resumed from its final checkpoint,
  // which takes no step, reports the same curve as one that never stopped.
  MetricsEvent done{trainer::kEventDone, tokens_, std::nullopt, throughput_.Totals(tokens_)};
  Report(done);
  if (lead()) {
    std::fprintf(stderr, "onset-train: done, %lld tokens in %.1f s of training (%.0f tokens/s)\n",
                 static_cast<long long>(tokens_), throughput_.seconds(),
                 done.metrics.at(metric::kTrainTokensPerSecond));
  }
  return result;
}

TrainResult Trainer::Diverged(TrainResult result, double loss, double lr) {
  Report({trainer::kEventDiverged,
          tokens_,
          std::nullopt,
          {{metric::kTrainLoss, loss}, {metric::kTrainLr, lr}}});
  if (lead()) {
    std::fprintf(stderr, "onset-train: diverged at step %lld (%lld tokens): loss %f\n",
                 static_cast<long long>(steps_), static_cast<long long>(tokens_), loss);
  }
  result.outcome = TrainOutcome::kDiverged;
  result.tokens = tokens_;
  result.steps = steps_;
  return result;
}

TrainResult Trainer::Stopped(TrainResult result, bool checkpointed) {
  if (!checkpointed && lead()) WriteCheckpoint();
  parallel_.Barrier();
  Report({trainer::kEventStopped, tokens_, std::nullopt, {}});
  if (lead()) {
    std::fprintf(stderr,
                 "onset-train: stopped on request at %lld tokens (step %lld); resume "
                 "with --resume\n",
                 static_cast<long long>(tokens_), static_cast<long long>(steps_));
  }
  result.outcome = TrainOutcome::kStopped;
  result.tokens = tokens_;
  result.steps = steps_;
  return result;
}

}  // namespace onset::model
