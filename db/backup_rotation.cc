#include "db/backup_rotation.h"

#include <ctime>
#include <filesystem>

#include "base/lock_file.h"
#include "db/instance.h"
#include "db/online_backup.h"

namespace onset::db {
namespace {

namespace fs = std::filesystem;

std::string BackupName(int64_t unix_ms) {
  const std::time_t seconds = static_cast<std::time_t>(unix_ms / 1000);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char name[64];
  std::strftime(name, sizeof(name), "onset-%Y%m%dT%H%M%SZ.db", &utc);
  return name;
}

// Why the recorded backup must stay where it is; "" when it may be deleted.
std::string WhySpare(const RecordedBackup& b, const std::vector<FileIdentity>& held) {
  std::optional<FileIdentity> now = IdentityOf(b.path, "");
  if (!now) return "";  // gone already
  if (now->device != b.device || now->inode != b.inode) {
    return "it is no longer the file the rotation wrote";
  }
  for (const FileIdentity& h : held) {
    if (h.device == now->device && h.inode == now->inode) return "it is " + h.what;
  }
  if (base::LockHeld(base::LockFileFor(b.path))) return "a coordinator serves it";
  absl::StatusOr<std::optional<BackupStamp>> stamp = ReadBackupStamp(b.path);
  if (!stamp.ok()) return "it cannot be read (" + std::string(stamp.status().message()) + ")";
  if (!stamp->has_value()) return "a coordinator has served it since (it is no backup any more)";
  return "";
}

}  // namespace

absl::StatusOr<RotationResult> RotateBackup(const std::string& source, const std::string& dir,
                                            int keep, int64_t unix_ms,
                                            const std::string& stamp_source,
                                            const BackupFileOptions& options,
                                            BackupRecords& records) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return absl::InternalError("cannot create " + dir + ": " + ec.message());
  RotationResult result;
  result.path = (fs::path(dir) / BackupName(unix_ms)).string();
  absl::StatusOr<int64_t> bytes =
      BackupDatabaseFile(source, result.path, options, BackupStamp{unix_ms, stamp_source});
  if (!bytes.ok()) return bytes.status();
  result.bytes = *bytes;
  std::optional<FileIdentity> written = IdentityOf(result.path, "");
  if (!written) return absl::InternalError("the backup " + result.path + " vanished once written");
  if (absl::Status s =
          records.RecordBackup({result.path, written->device, written->inode, *bytes, unix_ms});
      !s.ok()) {
    return s;
  }
  absl::StatusOr<std::vector<RecordedBackup>> all = records.RecordedBackups();
  if (!all.ok()) return all.status();
  std::vector<RecordedBackup> here;
  for (const RecordedBackup& b : *all) {
    if (fs::path(b.path).parent_path() == fs::path(result.path).parent_path()) here.push_back(b);
  }
  const size_t keep_n = static_cast<size_t>(std::max(keep, 1));
  for (size_t i = 0; i + keep_n < here.size(); ++i) {
    const RecordedBackup& old = here[i];
    if (old.path == result.path) continue;
    const std::string why = WhySpare(old, options.held);
    if (why.empty()) {
      fs::remove(old.path, ec);
      if (ec) {
        result.spared.push_back(old.path + ": cannot delete it: " + ec.message());
        continue;  // recorded still: tried again next time
      }
      result.deleted.push_back(old.path);
    } else {
      result.spared.push_back(old.path + ": left in place: " + why);
    }
    if (absl::Status s = records.ForgetBackup(old.path); !s.ok()) return s;
  }
  return result;
}

}  // namespace onset::db
