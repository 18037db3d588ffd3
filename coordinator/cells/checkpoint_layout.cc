#include "coordinator/cells/checkpoint_layout.h"

#include "base/checkpoint_name.h"
#include "common/path_under_root.h"

namespace onset::coordinator {

absl::StatusOr<std::string> CellCheckpointDir(const std::string& root, const std::string& study,
                                              const std::string& cell_id) {
  if (root.empty()) return std::string();
  return common::JoinUnderRoot(root, {study, cell_id});
}

absl::StatusOr<std::string> AttemptCheckpointDir(const std::string& root, const std::string& study,
                                                 const std::string& cell_id, int attempt) {
  if (root.empty()) return std::string();
  return common::JoinUnderRoot(root, {study, cell_id, base::AttemptDirName(attempt)});
}

absl::StatusOr<std::string> CheckpointPath(const std::string& root, const std::string& study,
                                           const std::string& cell_id, int attempt, bool own_dir,
                                           int64_t tokens) {
  if (root.empty()) return std::string();
  absl::StatusOr<std::string> dir = own_dir ? AttemptCheckpointDir(root, study, cell_id, attempt)
                                            : CellCheckpointDir(root, study, cell_id);
  if (!dir.ok()) return dir.status();
  return *dir + "/" + base::CheckpointFileName(tokens);
}

}  // namespace onset::coordinator
