#include "cli/address.h"

#include <filesystem>
#include <fstream>

#include "common/auth_token.h"

namespace onset::cli {

std::string ResolveCoordinatorAddress(const std::string& flag, const char* env,
                                      const std::string& data_dir) {
  if (!flag.empty()) return flag;
  if (env != nullptr && *env != '\0') return env;
  std::ifstream file(std::filesystem::path(data_dir) / kAddressFileName);
  std::string line;
  if (file && std::getline(file, line)) {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    if (!line.empty()) return line;
  }
  return kDefaultAddress;
}

std::string DefaultTokenFile(const std::string& flag, const char* env,
                             const std::string& data_dir) {
  const std::filesystem::path dir(data_dir);
  if (!flag.empty() || (env != nullptr && *env != '\0')) return "";
  std::error_code ec;
  if (!std::filesystem::exists(dir / kAddressFileName, ec)) return "";
  return (dir / common::kTokenFileName).string();
}

}  // namespace onset::cli
