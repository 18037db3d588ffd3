#include "cli/address.h"

#include <filesystem>
#include <fstream>
#include <optional>

#include "base/durable_file.h"
#include "common/auth_token.h"

namespace onset::cli {
namespace {

// The first line of <data_dir>/coordinator.addr without trailing blanks; empty when the file is
// missing or empty.
std::string ReadAddressFile(const std::string& data_dir) {
  std::ifstream file(std::filesystem::path(data_dir) / kAddressFileName);
  std::string line;
  if (file && std::getline(file, line)) {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
  }
  return line;
}

}  // namespace

absl::Status WriteAddressFile(const std::string& data_dir, const std::string& address) {
  const std::string path = (std::filesystem::path(data_dir) / kAddressFileName).string();
  if (std::optional<std::string> error = base::TryWriteFileDurably(path, address + "\n")) {
    return absl::UnavailableError("cannot write the address file " + path + ": " + *error);
  }
  return absl::OkStatus();
}

std::string ResolveCoordinatorAddress(const std::string& flag, const char* env,
                                      const std::string& data_dir) {
  if (!flag.empty()) return flag;
  if (env != nullptr && *env != '\0') return env;
  const std::string from_file = ReadAddressFile(data_dir);
  return from_file.empty() ? kDefaultAddress : from_file;
}

std::string DefaultTokenFile(const std::string& flag, const char* env,
                             const std::string& data_dir) {
  const std::filesystem::path dir(data_dir);
  if (!flag.empty() || (env != nullptr && *env != '\0')) return "";
  std::error_code ec;
  if (!std::filesystem::exists(dir / kAddressFileName, ec)) return "";
  return (dir / common::kTokenFileName).string();
}

DataSource ResolveDataSource(const std::string& flag, const char* env, const std::string& data_dir,
                             const std::function<bool(const std::string& address)>& answers) {
  DataSource source;
  if (!flag.empty()) {
    source.address = flag;
    return source;
  }
  if (env != nullptr && *env != '\0') {
    source.address = env;
    return source;
  }
  const std::string from_file = ReadAddressFile(data_dir);
  if (!from_file.empty() && answers(from_file)) {
    source.address = from_file;
    return source;
  }
  const std::filesystem::path database = std::filesystem::path(data_dir) / kDatabaseFileName;
  std::error_code ec;
  if (std::filesystem::is_regular_file(database, ec)) {
    source.database = database.string();
  } else if (from_file.empty() && answers(kDefaultAddress)) {
    source.address = kDefaultAddress;
  } else {
    source.stale_address = from_file;
  }
  return source;
}

}  // namespace onset::cli
