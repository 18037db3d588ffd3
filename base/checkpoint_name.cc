#include "base/checkpoint_name.h"

#include <cstdio>
#include <string>

namespace onset::base {

std::string CheckpointFileName(int64_t tokens) {
  char name[64];
  std::snprintf(name, sizeof name, "ckpt-%012lld.pt", static_cast<long long>(tokens));
  return name;
}

std::optional<int64_t> CheckpointTokens(std::string_view path) {
  const size_t slash = path.rfind('/');
  const std::string_view name = slash == std::string_view::npos ? path : path.substr(slash + 1);
  constexpr std::string_view kPrefix = "ckpt-", kSuffix = ".pt";
  if (name.size() != kPrefix.size() + 12 + kSuffix.size() || name.substr(0, 5) != kPrefix ||
      name.substr(name.size() - kSuffix.size()) != kSuffix) {
    return std::nullopt;
  }
  int64_t tokens = 0;
  for (char c : name.substr(kPrefix.size(), 12)) {
    if (c < '0' || c > '9') return std::nullopt;
    tokens = tokens * 10 + (c - '0');
  }
  return tokens;
}

std::string AttemptDirName(int attempt) { return "attempt-" + std::to_string(attempt); }

}  // namespace onset::base
