// Where a cell keeps its checkpoints: ROOT/STUDY/CELL under onsetd's --checkpoint-root, a
// directory every worker sees (a shared file system), so a cell requeued after a lost or handed
// back attempt resumes on any worker. Each attempt writes into its own ROOT/STUDY/CELL/attempt-N
// (base/checkpoint_name.h), which no other attempt touches, and resumes only what the
// coordinator names (a checkpoint its cell's lineage recorded), so a late writer cannot change
// what the next attempt reads. Without a root the worker keeps them in its own work directory,
// and the coordinator names no path.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace onset::coordinator {

// The checkpoint directory of `cell_id` of `study` under `root`; "" when `root` is empty (the
// worker chooses). Study files refuse names that are not one path component, but a study stored
// before that rule must still not reach (nor, with rerun --fresh, delete) outside the root:
// InvalidArgument naming the bad name then, and the cell keeps its checkpoints on the worker.
absl::StatusOr<std::string> CellCheckpointDir(const std::string& root, const std::string& study,
                                              const std::string& cell_id);

// ROOT/STUDY/CELL/attempt-N: where attempt `attempt` of the cell writes; "" without a root.
absl::StatusOr<std::string> AttemptCheckpointDir(const std::string& root, const std::string& study,
                                                 const std::string& cell_id, int attempt);

// The checkpoint file at `tokens` that attempt `attempt` wrote: in its own directory, or with
// `own_dir` false (attempts from before each had one) in the cell's; "" without a root.
absl::StatusOr<std::string> CheckpointPath(const std::string& root, const std::string& study,
                                           const std::string& cell_id, int attempt, bool own_dir,
                                           int64_t tokens);

}  // namespace onset::coordinator
