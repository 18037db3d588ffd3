#include "db/backup_destination.h"

#include <sys/stat.h>

#include <filesystem>

#include "base/lock_file.h"
#include "db/instance.h"

namespace onset::db {
namespace {

// The suffixes of the files that belong to a database NAME, beside it.
constexpr const char* kCompanions[] = {"-wal", "-shm", "-journal", ".lock", ".generation"};

absl::Status Refuse(const std::string& dest, const std::string& why) {
  return absl::FailedPreconditionError("cannot write a backup to " + dest + ": it " + why);
}

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

std::optional<FileIdentity> IdentityOf(const std::string& path, const std::string& what) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return FileIdentity{static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino), what};
}

std::vector<FileIdentity> HeldFiles(
    const std::string& db_path, const std::vector<std::pair<std::string, std::string>>& others) {
  std::vector<std::pair<std::string, std::string>> files = {
      {db_path, "the database the coordinator serves"},
      {db_path + "-wal", "the write-ahead log of the database the coordinator serves"},
      {db_path + "-shm", "the shared memory of the database the coordinator serves"},
      {db_path + "-journal", "the journal of the database the coordinator serves"},
      {base::LockFileFor(db_path), "the lock of the database the coordinator serves"},
      {db_path + ".generation", "the generation mark of the database the coordinator serves"},
  };
  files.insert(files.end(), others.begin(), others.end());
  std::vector<FileIdentity> held;
  for (const auto& [path, what] : files) {
    if (std::optional<FileIdentity> id = IdentityOf(path, what)) held.push_back(*id);
  }
  return held;
}

absl::Status CheckBackupDestination(const std::string& dest,
                                    const std::vector<FileIdentity>& held) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status link = fs::symlink_status(dest, ec);
  if (fs::is_symlink(link)) {
    return Refuse(dest, "is a symbolic link: name the backup's file itself");
  }
  if (fs::is_directory(link)) return Refuse(dest, "is a directory: name a file in it");
  if (fs::exists(link)) {
    if (!fs::is_regular_file(link)) return Refuse(dest, "is not a regular file");
    if (std::optional<FileIdentity> id = IdentityOf(dest, "")) {
      for (const FileIdentity& h : held) {
        if (h.device == id->device && h.inode == id->inode) {
          return Refuse(dest, "is " + h.what +
                                  ": a backup never replaces it; name a file outside the "
                                  "database's own files");
        }
      }
    }
    if (base::LockHeld(base::LockFileFor(dest))) {
      return Refuse(dest, "is a database that a coordinator serves (a process holds " +
                              base::LockFileFor(dest) + "): a backup never replaces it");
    }
    absl::StatusOr<std::optional<BackupStamp>> stamp = ReadBackupStamp(dest);
    if (!stamp.ok()) {
      return Refuse(dest, "exists and cannot be read to tell whether it is an earlier backup (" +
                              std::string(stamp.status().message()) + ")");
    }
    if (!stamp->has_value()) {
      return Refuse(dest,
                    "exists and is not an onset backup that no coordinator has served: a backup "
                    "replaces only an earlier backup; name a new file, or remove this one first "
                    "if you are sure it is not needed");
    }
    return absl::OkStatus();
  }
  for (const char* suffix : kCompanions) {
    if (!EndsWith(dest, suffix)) continue;
    const std::string base = dest.substr(0, dest.size() - std::string(suffix).size());
    if (!base.empty() && fs::exists(base, ec)) {
      return Refuse(dest, "is named as the " + std::string(suffix) + " file of " + base +
                              ", which exists: name the backup otherwise");
    }
  }
  return absl::OkStatus();
}

}  // namespace onset::db
