// Paths built from names that come from users (a study's name, a cell id): each name must be
// one path component, so that ROOT/STUDY/CELL never leaves ROOT ("..", "a/../../b", "/etc").
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace onset::common {

// Whether `name` is one harmless path component: non-empty, at most 255 bytes, not "." or
// "..", no '/', no NUL or other control character, and not starting with '-' (an option to
// whatever command is later given the path).
bool IsSafePathComponent(std::string_view name);

// `root` joined with `names` by '/', when every name IsSafePathComponent and the result,
// normalised, lies under `root`; else InvalidArgument naming the bad name, e.g.
// "'..' cannot name a directory under /ckpt".
absl::StatusOr<std::string> JoinUnderRoot(const std::string& root,
                                          const std::vector<std::string>& names);

// Whether `path` lies strictly under `root` once both are made absolute, normalised and their
// existing parts resolved through symbolic links (std::filesystem::weakly_canonical), so that
// neither "..", nor a link inside `root` that points elsewhere, leads out. An empty `root` holds
// nothing.
bool PathIsUnder(const std::string& path, const std::string& root);

}  // namespace onset::common
