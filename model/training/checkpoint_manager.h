// The trainer's checkpoints (checkpoint.h) as a policy: when one falls due, writing it and
// pruning the directory to what train.keep_checkpoints and train.keep_checkpoints_at keep, and
// which one a run resumes from (its own newest, or a WSD trunk's checkpoint it branches from),
// agreed across the ranks of a data-parallel run.
//
// Cadence: a checkpoint is due after the step that reaches the next multiple of
// train.checkpoint_every_tokens, after the step at each of train.keep_checkpoints_at (rounded
// up to a step boundary) and after the last step. It is due with or without a directory (the
// ranks still meet there); only writing needs one.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>

#include "model/config/cell_config.h"
#include "model/training/checkpoint.h"
#include "model/training/data_parallel.h"

namespace onset::model {

// Where a run starts: the first of `files` it can use (the checkpoints its worker names, the
// newest first), when any are named; else with `own` the newest valid checkpoint in its
// directory, if any; else, when `branch_from` names a WSD trunk's checkpoint file
// (trunk_progress.h), that file; else from scratch.
struct StartFrom {
  bool own = true;
  std::string branch_from;
  std::vector<std::string> files;
};

class CheckpointManager {
 public:
  // Checkpoints of `config` go into `dir` (created when needed); empty = none are written or
  // found. A step trains on `tokens_per_step` tokens; `device` is the model's.
  CheckpointManager(std::string dir, const CellConfig& config, int64_t tokens_per_step,
                    const at::Device& device);

  const std::string& dir() const { return dir_; }

  // A WSD trunk's (model/config/wsd_trunk.h): a checkpoint is also due at each of
  // `branch_points` (step boundaries), and pruning never deletes those; the checkpoints it
  // resumes need only share its stable phase (ConfigMatch::kStablePhase), so that a trunk whose
  // spec grew to a larger budget continues from where it stopped, but must have evaluated at every
  // one of `eval_at` they passed (TrunkResumeRefusal; else it resumes an older one).
  void ServeTrunk(const std::vector<int64_t>& branch_points, const std::vector<int64_t>& eval_at);
  // The pinned checkpoints: keep_checkpoints_at rounded up to step boundaries, and a trunk's
  // branch points.
  const std::set<int64_t>& pinned() const { return pinned_; }

  // Places the next cadence point beyond `tokens`: call when a run starts and after each
  // checkpoint that fell due.
  void ScheduleAfter(int64_t tokens);
  // Whether a checkpoint is due after the step that reached `tokens`; `last`: the run's final
  // step.
  bool Due(int64_t tokens, bool last) const;

  // Writes the checkpoint of `progress` (at progress.tokens), then deletes all but the newest
  // train.keep_checkpoints and the pinned ones. Nothing without a directory. Throws
  // std::runtime_error naming the file when it cannot be written.
  struct Saved {
    std::string path;
    int64_t bytes = 0;
    double seconds = 0;  // writing and pruning
  };
  std::optional<Saved> Save(const TrainProgress& progress, const torch::nn::Module& model,
                            const torch::optim::Optimizer& optimizer);

  // Restores `model` and `optimizer` from the first of from.files that is intact and of this
  // run, or (none named) the newest valid checkpoint of the run's own: damaged or missing ones
  // (and a trunk's that it cannot resume) are skipped with a message on stderr. With none
  // left, a branch starts from its trunk's file, which must be intact, of the same stable phase and
  // a valid start (AdoptTrunkProgress); anything else is an error naming it. Without a file either,
  // the run starts fresh (said on stderr too). With several ranks, rank 0 chooses the checkpoint
  // and every other rank loads that same file (so the files must be ones they can all read), and if
  // any rank fails, every rank gets an error.
  struct Resumed {
    std::optional<TrainProgress> progress;  // what was restored; none = a fresh start
    std::string file;                       // the file it was restored from
    // Why the run cannot go on: the newest intact checkpoint was written for another config, the
    // trunk's file cannot be branched from, or another rank failed.
    std::optional<std::string> error;
  };
  Resumed Resume(DataParallel& parallel, torch::nn::Module* model,
                 torch::optim::Optimizer* optimizer, const StartFrom& from = StartFrom());

 private:
  // `say_fresh`: no checkpoint means a fresh start (not a branch), which stderr says.
  Resumed LoadNewest(torch::nn::Module* model, torch::optim::Optimizer* optimizer, bool say_fresh);
  // The first of `files` that loads; *index says which (-1: none).
  Resumed LoadFirstOf(const std::vector<std::string>& files, torch::nn::Module* model,
                      torch::optim::Optimizer* optimizer, bool say_fresh, int* index);
  ProgressCheck OwnCheck(const std::string& path) const;  // a trunk's TrunkResumeRefusal
  Resumed LoadFrom(const std::string& path, torch::nn::Module* model,
                   torch::optim::Optimizer* optimizer);
  Resumed LoadBranch(const std::string& path, torch::nn::Module* model,
                     torch::optim::Optimizer* optimizer);

  std::string dir_;
  CellConfig config_;
  at::Device device_;
  int64_t every_;             // train.resolved_checkpoint_every_tokens()
  std::set<int64_t> pinned_;  // train.keep_checkpoints_at rounded up, a trunk's branch points
  bool trunk_ = false;        // ServeTrunk was called
  std::vector<int64_t> trunk_evals_;              // its eval_at
  ConfigMatch match_ = ConfigMatch::kTrajectory;  // which of its own checkpoints a run resumes
  int64_t next_ = 0;                              // the next cadence point
};

}  // namespace onset::model
