#include "worker/attempt_dir.h"

#include <fstream>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "common/path_under_root.h"
#include "common/status_macros.h"

namespace onset::worker {
namespace {

namespace fs = std::filesystem;

absl::Status WriteFile(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) return absl::InternalError(absl::StrCat("cannot write ", path.string()));
  return absl::OkStatus();
}

// InvalidArgument unless `path` lies under one of the worker's roots.
absl::Status CheckUnderRoots(const WorkerRoots& roots, const std::string& path, const char* what) {
  if (common::PathIsUnder(path, roots.work_dir) ||
      common::PathIsUnder(path, roots.checkpoint_root)) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "the job's ", what, " ", path, " lies outside this worker's --work-dir ", roots.work_dir,
      roots.checkpoint_root.empty()
          ? std::string(" (start onset-worker with --checkpoint-root set to the coordinator's)")
          : absl::StrCat(" and --checkpoint-root ", roots.checkpoint_root),
      ": refused"));
}

}  // namespace

absl::StatusOr<AttemptDir> PrepareAttemptDir(const WorkerRoots& roots, const JobSpec& job) {
  const std::string& work_dir = roots.work_dir;
  // The cell id names directories under the work directory (and the checkpoints that a fresh
  // start deletes): it must be one path component.
  if (!common::IsSafePathComponent(job.cell_id)) {
    return absl::InvalidArgumentError("cell id '" + job.cell_id +
                                      "' cannot name a directory under " + work_dir);
  }
  // Checked before anything is created: a coordinator that names a path elsewhere gets nothing
  // made, written or deleted there.
  if (!job.checkpoint_dir.empty()) {
    ONSET_RETURN_IF_ERROR(CheckUnderRoots(roots, job.checkpoint_dir, "checkpoint directory"));
  }
  if (!job.trunk_checkpoint.empty()) {
    ONSET_RETURN_IF_ERROR(CheckUnderRoots(roots, job.trunk_checkpoint, "trunk checkpoint"));
  }
  AttemptDir attempt;
  // Absolute: the trainer runs in this directory and gets the config's path.
  std::error_code ec;
  attempt.dir =
      fs::absolute(fs::path(work_dir) / job.cell_id / absl::StrCat("attempt-", job.attempt), ec);
  if (ec)
    return absl::InvalidArgumentError(absl::StrCat("bad work_dir ", work_dir, ": ", ec.message()));
  fs::create_directories(attempt.dir, ec);
  if (ec) {
    return absl::InternalError(
        absl::StrCat("cannot create ", attempt.dir.string(), ": ", ec.message()));
  }
  attempt.config_path = attempt.dir / "config.json";
  if (absl::Status s = WriteFile(attempt.config_path, job.config_json); !s.ok()) return s;

  attempt.checkpoint_dir = job.checkpoint_dir.empty() ? attempt.dir.parent_path() / "checkpoints"
                                                      : fs::path(job.checkpoint_dir);
  if (!job.fresh) return attempt;
  // The coordinator names the directory; delete only what is recognisably a cell's.
  if (attempt.checkpoint_dir.filename() != job.cell_id &&
      attempt.checkpoint_dir.filename() != "checkpoints") {
    return absl::FailedPreconditionError("refusing to discard " + attempt.checkpoint_dir.string() +
                                         ": not a checkpoint directory of cell " + job.cell_id);
  }
  fs::remove_all(attempt.checkpoint_dir, ec);
  if (ec) {
    return absl::InternalError(absl::StrCat("cannot discard the checkpoints in ",
                                            attempt.checkpoint_dir.string(), ": ", ec.message()));
  }
  attempt.discarded_checkpoints = true;
  return attempt;
}

}  // namespace onset::worker
