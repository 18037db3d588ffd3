#include "model/training/throughput.h"
#include "base/metric_names.h"

namespace onset::model {

Throughput::Throughput(double flops_per_token, int world_size)
    : flops_per_token_(flops_per_token), world_size_(world_size) {}

void Throughput::AddStep(double seconds, int64_t tokens, double loss) {
  train_seconds_ += seconds;
  window_seconds_ += seconds;
  window_tokens_ += tokens;
  window_loss_sum_ += loss;
  window_steps_ += 1;
}

std::map<std::string, double> Throughput::TakeWindow() {
  const double mean_loss = window_loss_sum_ / window_steps_;
  const double tps = window_seconds_ > 0 ? window_tokens_ / window_seconds_ : 0.0;
  std::map<std::string, double> metrics{{metric::kTrainLoss, mean_loss},
                                        {metric::kTrainTokensPerSecond, tps}};
  AddMfu(tps, &metrics);
  window_seconds_ = 0;
  window_tokens_ = 0;
  window_loss_sum_ = 0;
  window_steps_ = 0;
  return metrics;
}

std::map<std::string, double> Throughput::Totals(int64_t tokens) const {
  const double tps = train_seconds_ > 0 ? tokens / train_seconds_ : 0.0;
  std::map<std::string, double> metrics{{metric::kTrainTokensPerSecond, tps},
                                        {metric::kTrainSeconds, train_seconds_}};
  AddMfu(tps, &metrics);
  return metrics;
}

void Throughput::AddMfu(double tokens_per_second, std::map<std::string, double>* metrics) const {
  if (peak_flops_ <= 0 || tokens_per_second <= 0) return;
  (*metrics)[metric::kTrainMfu] =
      tokens_per_second * flops_per_token_ / (peak_flops_ * world_size_);
}

void Throughput::SaveTo(TrainProgress* progress) const {
  progress->train_seconds = train_seconds_;
  progress->window_loss_sum = window_loss_sum_;
  progress->window_steps = window_steps_;
  progress->window_tokens = window_tokens_;
  progress->window_seconds = window_seconds_;
}

void Throughput::RestoreFrom(const TrainProgress& progress) {
  train_seconds_ = progress.train_seconds;
  window_loss_sum_ = progress.window_loss_sum;
  window_steps_ = progress.window_steps;
  window_tokens_ = progress.window_tokens;
  window_seconds_ = progress.window_seconds;
}

}  // namespace onset::model
