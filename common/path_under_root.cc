#include "common/path_under_root.h"

#include <filesystem>

#include "absl/status/status.h"

namespace onset::common {

bool IsSafePathComponent(std::string_view name) {
  if (name.empty() || name.size() > 255 || name == "." || name == ".." || name[0] == '-') {
    return false;
  }
  for (const char c : name) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '/' || u < 0x20 || u == 0x7f) return false;
  }
  return true;
}

absl::StatusOr<std::string> JoinUnderRoot(const std::string& root,
                                          const std::vector<std::string>& names) {
  namespace fs = std::filesystem;
  std::string path = root;
  for (const std::string& name : names) {
    if (!IsSafePathComponent(name)) {
      return absl::InvalidArgumentError("'" + name + "' cannot name a directory under " + root);
    }
    path += "/" + name;
  }
  // Belt and braces: the normalised path still starts with the normalised root.
  const fs::path base = fs::path(root.empty() ? "." : root).lexically_normal();
  const fs::path joined = fs::path(path).lexically_normal();
  const fs::path rel = joined.lexically_relative(base);
  if (rel.empty() || *rel.begin() == "..") {
    return absl::InvalidArgumentError(path + " is not under " + root);
  }
  return path;
}

bool PathIsUnder(const std::string& path, const std::string& root) {
  namespace fs = std::filesystem;
  if (root.empty() || path.empty()) return false;
  std::error_code ec;
  const fs::path base = fs::weakly_canonical(fs::absolute(root, ec), ec);
  if (ec) return false;
  const fs::path full = fs::weakly_canonical(fs::absolute(path, ec), ec);
  if (ec) return false;
  const fs::path rel = full.lexically_relative(base);
  return !rel.empty() && *rel.begin() != ".." && rel != ".";
}

}  // namespace onset::common
