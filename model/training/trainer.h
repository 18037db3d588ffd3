// Trains one cell: builds the model and data from a CellConfig, runs the optimizer steps,
// evaluates on a token cadence, and reports everything through a MetricsSink (the JSON lines
// protocol of metrics_writer.h). Human-readable progress goes to stderr.
//
// Tokens are counted as predicted positions: a step of S sequences of seq_len inputs adds
// S * seq_len. A step holds max(1, train.batch_tokens / seq_len) sequences, processed in
// micro-batches of train.micro_batch sequences whose gradients accumulate.
//
// The pieces it composes: DataParallel (ranks, shares, collectives), CheckpointManager (cadence,
// writing, pruning, the resume point) and Throughput (tokens/s, MFU).
//
// Checkpoints (checkpoint.h) go into a directory given at construction, on the cadence of
// train.checkpoint_every_tokens, at each of train.keep_checkpoints_at and at the end. Resume()
// restores the newest valid one; the run then continues bit for bit as if it had never
// stopped (on the same device and thread count). It reports "start", "resume", then once more
// every train and eval event of the run before the checkpoint (idempotent for the coordinator:
// this recovers points that an attempt which died took with it), then new events.
//
// A WSD trunk (model/config/wsd_trunk.h) trains its spec's cell at the WSD rate without the
// decay, up to the spec's `until`: it evaluates after the steps that end at its eval_at and
// nowhere else (no final evaluation), reports train events on the train.log_every_steps cadence
// only (a cell's extra one after its last step would move the loss window its branches resume
// with), and writes a checkpoint, never pruned, at each branch point. Starting, it announces again
// every branch-point checkpoint it has up to where it starts (a "checkpoint" event with its
// checkpoint/bytes), and it resumes any checkpoint of its stable phase, so that a trunk extended
// to a larger budget continues from its last one. A branch (StartBranch, trunk_progress.h) starts
// from the trunk's checkpoint at its branch point and continues as a resumed run.
//
// Data parallel (docs/data-parallel.md, data_parallel.h): given a Collective of N ranks, each
// rank runs its own Trainer on the same config and trains on its share of each step's S
// sequences; each micro-batch's loss is still weighted by its size over S, so the sum of the
// ranks' gradients, taken by an all-reduce before clipping, is the one-process step mean.
// Every rank then takes the same optimizer step and keeps the same state. Rank 0 alone reports
// metrics and progress, evaluates and writes checkpoints while the others wait at a barrier;
// a checkpoint's data position is the global one, so a run may resume on another rank count.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <torch/optim/adamw.h>

#include "model/config/cell_config.h"
#include "model/config/wsd_trunk.h"
#include "model/data/synthetic_data.h"
#include "model/distributed/collective.h"
#include "model/evaluation/evaluator.h"
#include "model/nn/transformer.h"
#include "model/training/checkpoint.h"
#include "model/training/checkpoint_manager.h"
#include "model/training/data_parallel.h"
#include "model/training/lr_schedule.h"
#include "model/training/metrics_writer.h"
#include "model/training/run_span.h"
#include "model/training/throughput.h"

namespace onset::model {

// kStopped: a stop was requested (stop_request.h); the run checkpointed and can resume.
enum class TrainOutcome { kDone, kDiverged, kStopped };

// The configured data cannot be used (a token file missing, damaged or too short): a problem
// of the config, not of the run. what() reads "data.KEY: PATH: problem".
class DataError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

struct TrainResult {
  TrainOutcome outcome = TrainOutcome::kDone;
  int64_t tokens = 0;               // tokens trained on in total, resumed ones included
  int64_t steps = 0;                // optimizer steps in total, resumed ones included
  std::vector<double> step_losses;  // one per optimizer step taken by this Run(), in order
};

class Trainer {
 public:
  // Seeds LibTorch's generator with train.seed before building the model. `sink` is not
  // owned and must outlive the trainer; only rank 0 writes to it. Checkpoints are written into
  // `checkpoint_dir` (created when needed); empty = no checkpoints. `collective` (not owned,
  // outlives the trainer) connects the ranks of a data-parallel run; null = a single process.
  // Not thread-safe; the constructor uses LibTorch's global generator, so ranks that are
  // threads of one process must construct their trainers one at a time. Throws DataError when
  // the data's token files cannot be used (background.h).
  // `span` says what the run covers and when it reports (run_span.h).
  Trainer(const CellConfig& config, std::unique_ptr<RunSpan> span, const at::Device& device,
          MetricsSink* sink, std::string checkpoint_dir = "", Collective* collective = nullptr);
  // The cell `config`, to its budget (CellSpan).
  Trainer(const CellConfig& config, const at::Device& device, MetricsSink* sink,
          std::string checkpoint_dir = "", Collective* collective = nullptr);
  // The trunk `trunk` describes (TrunkSpan), training trunk.cell.
  Trainer(const TrunkSpec& trunk, const at::Device& device, MetricsSink* sink,
          std::string checkpoint_dir = "", Collective* collective = nullptr);

  // Restores the newest valid checkpoint in the checkpoint directory. Damaged ones are skipped
  // with a message on stderr; with none left the run starts fresh (also said on stderr).
  // Returns an error message, and restores nothing, when the newest intact checkpoint was
  // written for a different config. Call before Run(). With several ranks, rank 0 chooses the
  // checkpoint and every other rank loads that same file (so the directory must be one they
  // can all read); if any rank fails, every rank returns an error.
  std::optional<std::string> Resume();

  // Starts this WSD cell as a branch of its trunk from `trunk_file`, the trunk's checkpoint at
  // its branch point (or before), unless `resume` and the checkpoint directory holds a valid
  // checkpoint of the cell's own, which Resume() would restore: that wins. The file must be
  // intact and a valid start (CheckpointManager::Resume, trunk_progress.h); otherwise the error
  // names it, and the trainer must not Run(). The run then continues as a resumed one: it reports
  // the trunk's train events and its evals at this cell's own eval points as its own. With
  // several ranks, as Resume().
  std::optional<std::string> StartBranch(const std::string& trunk_file, bool resume);

  // Starts where `from` says (CheckpointManager::Resume): the first usable of from.files (the
  // checkpoints the worker names, the newest first), else with from.own the newest valid one in
  // the checkpoint directory, else from a WSD trunk's file, else from scratch. When files were
  // named, the run reports where it started with a resume event even when that is 0 tokens (it
  // could use none of them). An error message, and nothing restored, as Resume().
  std::optional<std::string> Start(const StartFrom& from);

  // Trains from the current position to train.tokens (or until the loss is not finite) and
  // returns the outcome. Throws std::runtime_error when a checkpoint cannot be written.
  TrainResult Run();

  // The devices' peak FLOP/s (flops.h); when set, train and done events carry train/mfu.
  void set_peak_flops(double flops) { throughput_.set_peak_flops(flops); }
  // The clock that stamps every event with its wall time (at_unix_ms), milliseconds since the
  // Unix epoch; the system's by default.
  void set_wall_clock(std::function<int64_t()> clock) { wall_clock_ = std::move(clock); }

  Transformer& model() { return model_; }
  int64_t tokens_per_step() const { return seqs_per_step_ * config_.model.seq_len; }

 private:
  bool lead() const { return parallel_.lead(); }
  double Step(double lr);  // one timed optimizer step; returns the mean micro-batch loss
  // Clips the gradients to train.grad_clip (measuring their norm), or measures the norm alone on
  // a step that `reports` it.
  void ClipOrMeasureGradients(bool reports);
  // (seqs, seq_len + 1) int64 on device_; with train.answer_loss_weight != 1, *weights
  // receives each target's weight in the loss, (seqs, seq_len) float.
  at::Tensor NextBatch(int64_t seqs, at::Tensor* weights);
  TrainProgress Progress() const;  // what a checkpoint holds besides the model and optimizer
  void Restore(const TrainProgress& p);
  // Stamps `event` with the wall time and emits it; with `keep`, also into reported_ (train and
  // eval events, which a resumed run reports again as they were, their times included).
  void Report(MetricsEvent event, bool keep = false);
  void EmitStart();
  void AnnounceBranchPoints();  // the span's branch-point checkpoints up to tokens_
  void EmitTrain(double lr);
  void Evaluate();
  void WriteCheckpoint();
  TrainResult Finish(TrainResult result);
  TrainResult Diverged(TrainResult result, double loss, double lr);
  TrainResult Stopped(TrainResult result, bool checkpointed);

  CellConfig config_;
  at::Device device_;
  bool bf16_;  // train.precision == "bf16": autocast on whatever device runs the cell
  DataParallel parallel_;
  NullSink dropped_;
  MetricsSink* sink_;  // &dropped_ on ranks other than 0
  Backgrounds backgrounds_;
  SyntheticData data_;          // training sequences
  SyntheticData heldout_data_;  // held-out sequences and NIAH prompts
  SequenceStream train_stream_;
  Transformer model_{nullptr};
  std::unique_ptr<torch::optim::AdamW> optimizer_;
  LrSchedule schedule_;
  std::unique_ptr<Evaluator> evaluator_;  // rank 0 only
  int64_t seqs_per_step_;
  CheckpointManager checkpoints_;
  Throughput throughput_;          // training time only, evaluation and checkpoints excluded
  std::unique_ptr<RunSpan> span_;  // what the run covers and when it reports
  double grad_norm_ = 0;           // train/grad_norm of step grad_norm_step_
  int64_t grad_norm_step_ = -1;

  // Position; a checkpoint holds these and the throughput window.
  int64_t tokens_ = 0;
  int64_t steps_ = 0;
  int64_t next_sequence_ = 0;  // index of the next step's first sequence in train_stream_
  bool resumed_ = false;
  bool report_start_ = false;  // checkpoints were named: say where the run started, even at 0
  std::string resumed_dir_;    // the directory of the checkpoint it resumed, when not its own
  std::string reported_;       // TrainProgress::reported: train and eval events so far, JSON lines
  std::function<int64_t()> wall_clock_ = [] {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  };
};

}  // namespace onset::model
