// Where a cell keeps its checkpoints: ROOT/STUDY/CELL under onsetd's --checkpoint-root, a
// directory every worker sees (a shared file system), so a cell requeued after a lost or handed
// back attempt resumes on any worker. Without a root the worker keeps them in its own work
// directory, and the coordinator names none.
#pragma once

#include <string>

#include "absl/status/statusor.h"

namespace onset::coordinator {

// The checkpoint directory of `cell_id` of `study` under `root`; "" when `root` is empty (the
// worker chooses). Study files refuse names that are not one path component, but a study stored
// before that rule must still not reach (nor, with rerun --fresh, delete) outside the root:
// InvalidArgument naming the bad name then, and the cell keeps its checkpoints on the worker.
absl::StatusOr<std::string> CellCheckpointDir(const std::string& root, const std::string& study,
                                              const std::string& cell_id);

}  // namespace onset::coordinator
