#include "cli/client/address.h"

#include <unistd.h>

#include <filesystem>
#include <optional>

#include "base/durable_file.h"
#include "base/lock_file.h"
#include "base/posix_io.h"
#include "common/auth_token.h"
#include "common/listen_address.h"

namespace onset::cli {
namespace {

// An address is a host and a port: a longer first line is no address file of onset's.
constexpr size_t kMaxAddressFileBytes = 1024;

// The first line of <data_dir>/coordinator.addr without trailing blanks; empty when the file is
// missing, empty, not a regular file (never waited on) or unreadable.
std::string ReadAddressFile(const std::string& data_dir) {
  const std::string path = (std::filesystem::path(data_dir) / kAddressFileName).string();
  const base::OpenedFile file = base::OpenRegularFile(path);
  if (file.fd < 0) return "";
  std::string text;
  (void)base::ReadUpTo(file.fd, kMaxAddressFileBytes, &text);  // what was read, on an error too
  ::close(file.fd);
  std::string line = text.substr(0, text.find('\n'));
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
  return line;
}

bool IsLoopbackAddress(const std::string& address) {
  return common::IsLoopbackHost(common::HostOf(address));
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

bool FollowsAddressFile(const std::string& flag, const char* env, const std::string& data_dir) {
  if (!flag.empty() || (env != nullptr && *env != '\0')) return false;
  std::error_code ec;
  return std::filesystem::exists(std::filesystem::path(data_dir) / kAddressFileName, ec);
}

std::string DefaultTokenFile(const std::string& flag, const char* env,
                             const std::string& data_dir) {
  if (!FollowsAddressFile(flag, env, data_dir)) return "";
  return (std::filesystem::path(data_dir) / common::kTokenFileName).string();
}

common::TokenSources ClientTokenSources(const std::string& token_flag, const std::string& flag,
                                        const char* env, const std::string& data_dir) {
  if (FollowsAddressFile(flag, env, data_dir)) {
    common::TokenSources only_beside;
    only_beside.default_file = DefaultTokenFile(flag, env, data_dir);
    return only_beside;
  }
  return common::TokenSources::FromEnvironment(token_flag, "");
}

bool DataDirServed(const std::string& data_dir) {
  return base::LockHeld(
      base::LockFileFor((std::filesystem::path(data_dir) / kDatabaseFileName).string()));
}

DataSource ResolveDataSource(const std::string& flag, const char* env, const std::string& data_dir,
                             const std::function<bool(const std::string& address)>& answers,
                             const std::function<bool()>& served) {
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
  // Followed only to loopback, and only while the coordinator that wrote it lives: a run that
  // was killed leaves the file behind, and its port may be anyone's by now.
  if (!from_file.empty() && IsLoopbackAddress(from_file) && served() && answers(from_file)) {
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
