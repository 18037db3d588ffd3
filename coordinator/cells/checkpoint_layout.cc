#include "coordinator/cells/checkpoint_layout.h"

#include "common/path_under_root.h"

namespace onset::coordinator {

absl::StatusOr<std::string> CellCheckpointDir(const std::string& root, const std::string& study,
                                              const std::string& cell_id) {
  if (root.empty()) return std::string();
  return common::JoinUnderRoot(root, {study, cell_id});
}

}  // namespace onset::coordinator
