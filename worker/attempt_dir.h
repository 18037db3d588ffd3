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

// Where a worker may create and delete files for its jobs: under `work_dir`, and under
// `checkpoint_root` (onset-worker --checkpoint-root, the shared directory the coordinator's
// --checkpoint-root names; empty: none).
struct WorkerRoots {
  std::string work_dir;
  std::string checkpoint_root;
};

// Creates the attempt's directory under `roots.work_dir`, writes the job's config into it and,
// for a fresh job (`onset rerun --fresh`), deletes the cell's checkpoints. Checkpoints belong to
// the cell, not the attempt: a later attempt of the same cell on this machine (a requeue after a
// lost lease, or `onset run` resumed after an interrupt) continues from the newest valid one
// instead of starting over.
//
// The coordinator is not trusted with this machine's files: a checkpoint directory or trunk
// checkpoint that the job names must lie under one of `roots` (common::PathIsUnder, links
// resolved), or the job is refused before anything is created or deleted. Errors say what and
// where; their message is the job's failure reason.
absl::StatusOr<AttemptDir> PrepareAttemptDir(const WorkerRoots& roots, const JobSpec& job);

}  // namespace onset::worker
