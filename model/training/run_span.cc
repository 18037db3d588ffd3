#include "model/training/run_span.h"

namespace onset::model {
namespace {

class CellRun : public RunSpan {
 public:
  explicit CellRun(const CellConfig& config) : train_(config.train) {}

  int64_t end_tokens() const override { return train_.tokens; }
  const char* end_name() const override { return "budget"; }
  LrSchedule Schedule() const override { return LrSchedule::FromConfig(train_); }
  void Configure(CheckpointManager*) const override {}
  bool EvalDue(int64_t tokens, int64_t next_eval, bool last) const override {
    return tokens >= next_eval || last;
  }
  bool TrainEventAtEnd() const override { return true; }
  bool FinalEval(int64_t tokens) const override { return tokens >= train_.tokens; }
  const std::vector<int64_t>& branch_points() const override { return none_; }

 private:
  const TrainConfig train_;
  const std::vector<int64_t> none_;
};

class TrunkRun : public RunSpan {
 public:
  explicit TrunkRun(const TrunkSpec& trunk)
      : trunk_(trunk), evals_(trunk.eval_at.begin(), trunk.eval_at.end()) {}

  int64_t end_tokens() const override { return trunk_.until; }
  const char* end_name() const override { return "WSD trunk to"; }
  LrSchedule Schedule() const override { return LrSchedule::StablePhase(trunk_.cell.train); }
  void Configure(CheckpointManager* checkpoints) const override {
    checkpoints->ServeTrunk(trunk_.branch_points, trunk_.eval_at);
  }
  bool EvalDue(int64_t tokens, int64_t, bool) const override { return evals_.count(tokens) > 0; }
  // Train events at its cadence only: its branches report them as their own, up to their
  // branch points (trunk_progress.h).
  bool TrainEventAtEnd() const override { return false; }
  bool FinalEval(int64_t) const override { return false; }
  const std::vector<int64_t>& branch_points() const override { return trunk_.branch_points; }

 private:
  const TrunkSpec trunk_;
  const std::set<int64_t> evals_;
};

}  // namespace

std::unique_ptr<RunSpan> CellSpan(const CellConfig& config) {
  return std::make_unique<CellRun>(config);
}

std::unique_ptr<RunSpan> TrunkSpan(const TrunkSpec& trunk) {
  return std::make_unique<TrunkRun>(trunk);
}

}  // namespace onset::model
