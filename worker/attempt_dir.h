// The directory an attempt runs in, and where its checkpoints go:
//   <work_dir>/<cell_id>/attempt-<n>/config.json    the cell's config, as the coordinator sent it
//   <work_dir>/<cell_id>/attempt-<n>/trainer.lock   held by the trainer while it runs
//   <work_dir>/<cell_id>/attempt-<n>/checkpoints/   its checkpoints, unless the job names a
//                                                   directory under the shared root
// Every attempt writes into a directory of its own, never another's, and resumes only the
// checkpoints the coordinator names (those its cell's lineage recorded), so that a trainer that
// outlived its lease cannot change what the next attempt reads.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "worker/coordinator_client.h"

namespace onset::worker {

struct AttemptDir {
  std::filesystem::path dir;             // absolute: the trainer runs in it
  std::filesystem::path config_path;     // dir/config.json
  std::filesystem::path lock_path;       // dir/trainer.lock (trainer_lock.h)
  std::filesystem::path checkpoint_dir;  // this attempt's own, empty when it starts
  // The checkpoints it may resume, the newest first (the job's resume_from, as paths on this
  // machine); the trainer takes the first it can use.
  std::vector<std::filesystem::path> resume_files;
  bool cleared_checkpoint_dir = false;  // the directory held files of an unknown earlier run
};

// Where a worker may create and delete files for its jobs: under `work_dir`, and under
// `checkpoint_root` (onset-worker --checkpoint-root, the shared directory the coordinator's
// --checkpoint-root names; empty: none).
struct WorkerRoots {
  std::string work_dir;
  std::string checkpoint_root;
};

// The attempt's directory under `work_dir`: <work_dir>/<cell_id>/attempt-<attempt>.
std::filesystem::path AttemptDirPath(const std::string& work_dir, const std::string& cell_id,
                                     int attempt);

// Creates the attempt's directory under `roots.work_dir`, writes the job's config into it, and
// makes sure its checkpoint directory is empty: no other attempt ever writes there, so files
// found in it are left from another database's run (a number reused), and are deleted. A
// checkpoint the job names without a path (the coordinator has no shared root) is looked for in
// the work directory, in the directory of the attempt that wrote it.
//
// The coordinator is not trusted with this machine's files: a checkpoint directory, resume file
// or trunk checkpoint that the job names must lie under one of `roots` (common::PathIsUnder,
// links resolved), or the job is refused before anything is created or deleted. Errors say what
// and where; their message is the job's failure reason.
absl::StatusOr<AttemptDir> PrepareAttemptDir(const WorkerRoots& roots, const JobSpec& job);

}  // namespace onset::worker
