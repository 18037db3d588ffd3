// The directory an attempt runs in, and the cell's checkpoints beside it:
//   <work_dir>/<cell_id>/attempt-<n>/config.json   the cell's config, as the coordinator sent it
//   <work_dir>/<cell_id>/checkpoints/              unless the job names another directory
#pragma once

#include <filesystem>
#include <string>

#include "absl/status/statusor.h"
#include "worker/coordinator_client.h"

namespace onset::worker {

struct AttemptDir {
  std::filesystem::path dir;             // absolute: the trainer runs in it
  std::filesystem::path config_path;     // dir/config.json
  std::filesystem::path checkpoint_dir;  // the cell's, shared by its attempts
  bool discarded_checkpoints = false;    // a fresh job's old checkpoints were deleted
};

// Creates the attempt's directory under `work_dir`, writes the job's config into it and, for a
// fresh job (`onset rerun --fresh`), deletes the cell's checkpoints. Checkpoints belong to the
// cell, not the attempt: a later attempt of the same cell on this machine (a requeue after a lost
// lease, or `onset run` resumed after an interrupt) continues from the newest valid one instead
// of starting over. Errors say what and where; their message is the job's failure reason.
absl::StatusOr<AttemptDir> PrepareAttemptDir(const std::string& work_dir, const JobSpec& job);

}  // namespace onset::worker
