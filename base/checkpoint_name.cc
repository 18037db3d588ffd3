#include "base/checkpoint_name.h"

#include <cstdio>
#include <string>

namespace onset::base {

std::string CheckpointFileName(int64_t tokens) {
  char name[64];
  std::snprintf(name, sizeof name, "ckpt-%012lld.pt", static_cast<long long>(tokens));
  return name;
}

std::string AttemptDirName(int attempt) { return "attempt-" + std::to_string(attempt); }

}  // namespace onset::base
