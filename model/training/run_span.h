// What a run covers and when it reports: the part of a run that differs between a grid cell
// (its whole budget) and a WSD trunk (the stable phase its branches start from, wsd_trunk.h).
// The trainer is given one and asks it, never which kind of run it trains.
#pragma once

#include <cstdint>
#include <memory>
#include <set>
#include <vector>

#include "model/config/cell_config.h"
#include "model/config/wsd_trunk.h"
#include "model/training/checkpoint_manager.h"
#include "model/training/lr_schedule.h"

namespace onset::model {

class RunSpan {
 public:
  virtual ~RunSpan() = default;

  // The tokens the run trains to, and how the trainer's start line names that end.
  virtual int64_t end_tokens() const = 0;
  virtual const char* end_name() const = 0;
  // The learning rate along the run.
  virtual LrSchedule Schedule() const = 0;
  // Tells the checkpoint manager what this run's checkpoints must keep and may resume.
  virtual void Configure(CheckpointManager* checkpoints) const = 0;
  // Whether the step that reached `tokens` ends with an evaluation; `next_eval` is the cell's
  // next evaluation point (EvalConfig::NextEvalAfter), `last` whether the run ends with it.
  virtual bool EvalDue(int64_t tokens, int64_t next_eval, bool last) const = 0;
  // Whether the run's last step reports a train event whatever log_every_steps says.
  virtual bool TrainEventAtEnd() const = 0;
  // Whether an evaluation at `tokens` is the cell's final one (the head ablation runs then).
  virtual bool FinalEval(int64_t tokens) const = 0;
  // Checkpoints the run announces as it starts, up to where it stands (a trunk's branch
  // points, which its branches wait for); none for a cell.
  virtual const std::vector<int64_t>& branch_points() const = 0;
};

// A grid cell: config.train.tokens, the cell's own schedule and evaluation points, the final
// evaluation at the budget.
std::unique_ptr<RunSpan> CellSpan(const CellConfig& config);
// A WSD trunk: trunk.until at the stable rate, evaluations at trunk.eval_at only (its branches
// report them as theirs), no final evaluation, its branch points kept and announced.
std::unique_ptr<RunSpan> TrunkSpan(const TrunkSpec& trunk);

}  // namespace onset::model
