#include "worker/attempt_dir.h"

#include <fstream>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "base/checkpoint_name.h"
#include "common/path_under_root.h"
#include "common/status_macros.h"
#include "worker/trainer_lock.h"

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

// Where a checkpoint the coordinator named without a path lies in the work directory.
fs::path LocalCheckpoint(const std::string& work_dir, const JobSpec& job, const ResumeFrom& from) {
  const fs::path cell = fs::path(work_dir) / job.cell_id;
  const fs::path dir = from.own_dir ? cell / base::AttemptDirName(from.attempt) / "checkpoints"
                                    : cell / "checkpoints";
  return fs::absolute(dir / base::CheckpointFileName(from.tokens));
}

}  // namespace

fs::path AttemptDirPath(const std::string& work_dir, const std::string& cell_id, int attempt) {
  return fs::path(work_dir) / cell_id / base::AttemptDirName(attempt);
}

absl::StatusOr<AttemptDir> PrepareAttemptDir(const WorkerRoots& roots, const JobSpec& job) {
  const std::string& work_dir = roots.work_dir;
  // The cell id names directories under the work directory: it must be one path component.
  if (!common::IsSafePathComponent(job.cell_id)) {
    return absl::InvalidArgumentError("cell id '" + job.cell_id +
                                      "' cannot name a directory under " + work_dir);
  }
  if (job.attempt < 1) {
    return absl::InvalidArgumentError(absl::StrCat("attempt ", job.attempt, ": numbered from 1"));
  }
  // Checked before anything is created: a coordinator that names a path elsewhere gets nothing
  // made, written or deleted there.
  if (!job.checkpoint_dir.empty()) {
    ONSET_RETURN_IF_ERROR(CheckUnderRoots(roots, job.checkpoint_dir, "checkpoint directory"));
  }
  if (!job.trunk_checkpoint.empty()) {
    ONSET_RETURN_IF_ERROR(CheckUnderRoots(roots, job.trunk_checkpoint, "trunk checkpoint"));
  }
  for (const ResumeFrom& from : job.resume_from) {
    if (!from.path.empty()) ONSET_RETURN_IF_ERROR(CheckUnderRoots(roots, from.path, "checkpoint"));
  }
  AttemptDir attempt;
  // Absolute: the trainer runs in this directory and gets the config's path.
  std::error_code ec;
  attempt.dir = fs::absolute(AttemptDirPath(work_dir, job.cell_id, job.attempt), ec);
  if (ec) {
    return absl::InvalidArgumentError(absl::StrCat("bad work_dir ", work_dir, ": ", ec.message()));
  }
  fs::create_directories(attempt.dir, ec);
  if (ec) {
    return absl::InternalError(
        absl::StrCat("cannot create ", attempt.dir.string(), ": ", ec.message()));
  }
  attempt.config_path = attempt.dir / "config.json";
  attempt.lock_path = attempt.dir / kTrainerLockFile;
  if (absl::Status s = WriteFile(attempt.config_path, job.config_json); !s.ok()) return s;

  attempt.checkpoint_dir =
      job.checkpoint_dir.empty() ? attempt.dir / "checkpoints" : fs::path(job.checkpoint_dir);
  for (const ResumeFrom& from : job.resume_from) {
    attempt.resume_files.push_back(from.path.empty() ? LocalCheckpoint(work_dir, job, from)
                                                     : fs::path(from.path));
  }
  // The coordinator names the directory; delete only what is recognisably an attempt's.
  if (attempt.checkpoint_dir.filename() != base::AttemptDirName(job.attempt) &&
      attempt.checkpoint_dir.filename() != "checkpoints") {
    return absl::FailedPreconditionError(
        "refusing to write into " + attempt.checkpoint_dir.string() +
        ": not a checkpoint directory of attempt " + std::to_string(job.attempt));
  }
  if (fs::exists(attempt.checkpoint_dir, ec) && !fs::is_empty(attempt.checkpoint_dir, ec)) {
    fs::remove_all(attempt.checkpoint_dir, ec);
    if (ec) {
      return absl::InternalError(
          absl::StrCat("cannot clear ", attempt.checkpoint_dir.string(), ": ", ec.message()));
    }
    attempt.cleared_checkpoint_dir = true;
  }
  fs::create_directories(attempt.checkpoint_dir, ec);
  if (ec) {
    return absl::InternalError(
        absl::StrCat("cannot create ", attempt.checkpoint_dir.string(), ": ", ec.message()));
  }
  return attempt;
}

}  // namespace onset::worker
