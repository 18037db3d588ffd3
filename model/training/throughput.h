// The trainer's throughput bookkeeping: training time only (evaluation and checkpoints are
// excluded), over the whole run and over the window of steps since the last train event, and
// the metrics made of it (metrics_writer.h):
//
//   train event  train/loss               mean step loss over the window
//                train/tokens_per_second  the window's tokens over its seconds
//   done event   train/tokens_per_second  all tokens over all training seconds
//                train/seconds            all training seconds
//   both         train/mfu                tokens/s * FLOPs per token / (peak FLOP/s * ranks),
//                                         only when the peak is known and tokens/s > 0
//
// Tokens are every rank's: a data-parallel step counts the whole step once, and each rank has a
// device of the given peak. Plain arithmetic; the caller times the steps.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "model/training/checkpoint.h"

namespace onset::model {

class Throughput {
 public:
  // `flops_per_token`: TrainFlopsPerToken of the model (flops.h); `world_size`: the ranks.
  explicit Throughput(double flops_per_token = 0, int world_size = 1);

  // The devices' peak FLOP/s; 0 (the default) = unknown: no train/mfu.
  void set_peak_flops(double flops) { peak_flops_ = flops; }

  // One optimizer step that took `seconds` to train on `tokens` with mean loss `loss`.
  void AddStep(double seconds, int64_t tokens, double loss);

  // The train event's metrics for the window (see above; the caller adds train/lr), and a new
  // window begins. Call with at least one step in the window.
  std::map<std::string, double> TakeWindow();

  // The done event's metrics, `tokens` being the run's total (resumed ones included).
  std::map<std::string, double> Totals(int64_t tokens) const;

  double seconds() const { return train_seconds_; }

  // The bookkeeping travels in checkpoints: a resumed run reports as if it had never stopped.
  void SaveTo(TrainProgress* progress) const;
  void RestoreFrom(const TrainProgress& progress);

 private:
  void AddMfu(double tokens_per_second, std::map<std::string, double>* metrics) const;

  double flops_per_token_;
  int world_size_;
  double peak_flops_ = 0;
  double train_seconds_ = 0;
  // The window: steps since the last train event.
  double window_seconds_ = 0;
  int64_t window_tokens_ = 0;
  double window_loss_sum_ = 0;
  int64_t window_steps_ = 0;
};

}  // namespace onset::model
