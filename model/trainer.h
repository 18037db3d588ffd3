// Trains one cell: builds the model and data from a CellConfig, runs the optimizer steps,
// evaluates on a token cadence, and reports everything through a MetricsSink (the JSON lines
// protocol of metrics_writer.h). Human-readable progress goes to stderr.
//
// Tokens are counted as predicted positions: a step of S sequences of seq_len inputs adds
// S * seq_len. A step holds max(1, train.batch_tokens / seq_len) sequences, processed in
// micro-batches of train.micro_batch sequences whose gradients accumulate.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include <ATen/ATen.h>
#include <torch/optim/adamw.h>

#include "model/cell_config.h"
#include "model/evaluator.h"
#include "model/lr_schedule.h"
#include "model/metrics_writer.h"
#include "model/synthetic_data.h"
#include "model/transformer.h"

namespace onset::model {

enum class TrainOutcome { kDone, kDiverged };

struct TrainResult {
  TrainOutcome outcome = TrainOutcome::kDone;
  int64_t tokens = 0;
  int64_t steps = 0;
  std::vector<double> step_losses;  // one per optimizer step, in order
};

class Trainer {
 public:
  // Seeds LibTorch's generator with train.seed before building the model. `sink` is not
  // owned and must outlive the trainer. Not thread-safe.
  Trainer(const CellConfig& config, const at::Device& device, MetricsSink* sink);

  // Trains to train.tokens (or until the loss is not finite) and returns the outcome.
  TrainResult Run();

  Transformer& model() { return model_; }
  int64_t tokens_per_step() const { return seqs_per_step_ * config_.model.seq_len; }

 private:
  double Step(int64_t tokens_after);   // one optimizer step; returns the mean micro-batch loss
  at::Tensor NextBatch(int64_t seqs);  // (seqs, seq_len + 1) int64 on device_
  void Evaluate(int64_t tokens);
  void EmitTrain(int64_t tokens, int64_t step, double lr);

  CellConfig config_;
  at::Device device_;
  bool bf16_;
  MetricsSink* sink_;
  SyntheticData data_;
  SequenceStream train_stream_;
  Transformer model_{nullptr};
  std::unique_ptr<torch::optim::AdamW> optimizer_;
  LrSchedule schedule_;
  std::unique_ptr<Evaluator> evaluator_;
  int64_t seqs_per_step_;

  // Throughput bookkeeping (training time only, evaluation excluded).
  using Clock = std::chrono::steady_clock;
  double train_seconds_ = 0;
  double window_seconds_ = 0;
  int64_t window_tokens_ = 0;
  double window_loss_sum_ = 0;
  int window_steps_ = 0;
};

}  // namespace onset::model
