#include "db/online_backup.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <regex>
#include <vector>

#include "db/sqlite.h"

namespace onset::db {
namespace {

namespace fs = std::filesystem;

// fsync of a file or directory; an error names it.
absl::Status Sync(const std::string& path, bool directory) {
  const int fd = ::open(path.c_str(), (directory ? O_DIRECTORY : 0) | O_RDONLY | O_CLOEXEC);
  if (fd < 0) return absl::InternalError(path + ": cannot open to sync: " + std::strerror(errno));
  const int rc = ::fsync(fd);
  const int saved = errno;
  ::close(fd);
  if (rc != 0) return absl::InternalError(path + ": fsync failed: " + std::strerror(saved));
  return absl::OkStatus();
}

void RemoveQuietly(const std::string& path) {
  std::error_code ec;
  for (const char* suffix : {"", "-journal", "-wal", "-shm"}) fs::remove(path + suffix, ec);
}

}  // namespace

absl::Status QuickCheckFile(const std::string& path) {
  Connection::Options read_only;
  read_only.read_only = true;
  absl::StatusOr<std::unique_ptr<Connection>> db = Connection::Open(path, read_only);
  if (!db.ok()) return db.status();
  absl::StatusOr<Statement> check = (*db)->Prepare("PRAGMA quick_check");
  if (!check.ok()) return check.status();
  absl::StatusOr<bool> row = check->Step();
  if (!row.ok()) return row.status();
  if (*row && check->Text(0) == "ok") return absl::OkStatus();
  return absl::DataLossError(
      path + " fails PRAGMA quick_check: " + (*row ? check->Text(0) : std::string("no answer")));
}

absl::StatusOr<int64_t> BackupDatabaseFile(const std::string& source, const std::string& dest) {
  Connection::Options read_only;
  read_only.read_only = true;
  absl::StatusOr<std::unique_ptr<Connection>> from = Connection::Open(source, read_only);
  if (!from.ok()) return from.status();
  const std::string partial = dest + ".partial-" + std::to_string(::getpid());
  RemoveQuietly(partial);
  if (absl::Status s = (*from)->BackupInto(partial); !s.ok()) {
    RemoveQuietly(partial);
    return s;
  }
  if (absl::Status checked = QuickCheckFile(partial); !checked.ok()) {
    RemoveQuietly(partial);
    return checked;
  }
  if (absl::Status s = Sync(partial, false); !s.ok()) {
    RemoveQuietly(partial);
    return s;
  }
  std::error_code ec;
  fs::rename(partial, dest, ec);
  if (ec) {
    RemoveQuietly(partial);
    return absl::InternalError("cannot rename " + partial + " to " + dest + ": " + ec.message());
  }
  const fs::path parent = fs::path(dest).parent_path();
  if (absl::Status s = Sync(parent.empty() ? "." : parent.string(), true); !s.ok()) return s;
  const auto size = fs::file_size(dest, ec);
  return ec ? int64_t{0} : static_cast<int64_t>(size);
}

absl::StatusOr<std::string> WriteRotatingBackup(const std::string& source, const std::string& dir,
                                                int keep, int64_t unix_ms) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return absl::InternalError("cannot create " + dir + ": " + ec.message());
  const std::time_t seconds = static_cast<std::time_t>(unix_ms / 1000);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char name[64];
  std::strftime(name, sizeof(name), "onset-%Y%m%dT%H%M%SZ.db", &utc);
  const std::string path = (fs::path(dir) / name).string();
  absl::StatusOr<int64_t> written = BackupDatabaseFile(source, path);
  if (!written.ok()) return written.status();
  static const std::regex kName(R"(onset-\d{8}T\d{6}Z\.db)");
  std::vector<std::string> backups;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    const std::string file = e.path().filename().string();
    if (e.is_regular_file(ec) && std::regex_match(file, kName)) backups.push_back(file);
  }
  std::sort(backups.begin(), backups.end());  // the names sort by time
  for (size_t i = 0; i + static_cast<size_t>(std::max(keep, 1)) < backups.size(); ++i) {
    fs::remove(fs::path(dir) / backups[i], ec);
  }
  return path;
}

}  // namespace onset::db
