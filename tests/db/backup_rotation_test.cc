// Rotating backups delete only what they wrote: the newest N of their records stay, files that
// merely look like backups are left alone, and so is a recorded backup that a coordinator has
// served since, one that was replaced, and one the coordinator holds.
#include "db/backup_rotation.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>

#include "db/instance.h"
#include "db/schema.h"
#include "tests/testing/temp_dir.h"

namespace onset::db {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

class MemoryRecords final : public BackupRecords {
 public:
  absl::Status RecordBackup(const RecordedBackup& b) override {
    records_[b.path] = b;
    return absl::OkStatus();
  }
  absl::StatusOr<std::vector<RecordedBackup>> RecordedBackups() override {
    std::vector<RecordedBackup> all;
    for (const auto& [path, b] : records_) all.push_back(b);
    std::sort(all.begin(), all.end(), [](const RecordedBackup& a, const RecordedBackup& b) {
      return a.taken_unix_ms < b.taken_unix_ms;
    });
    return all;
  }
  absl::Status ForgetBackup(const std::string& path) override {
    records_.erase(path);
    return absl::OkStatus();
  }
  std::map<std::string, RecordedBackup> records_;
};

std::vector<std::string> Files(const std::string& dir) {
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(dir)) files.push_back(e.path().filename());
  std::sort(files.begin(), files.end());
  return files;
}

constexpr int64_t kT0 = 1'796'558'400'000;  // 2026-12-06T12:00:00Z
constexpr int64_t kHour = 3'600'000;

class BackupRotationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<Connection>> db = OpenDatabase(dir_.File("onset.db"));
    ASSERT_TRUE(db.ok()) << db.status();
    db_ = *std::move(db);
    backups_ = dir_.File("backups");
  }
  absl::StatusOr<RotationResult> Rotate(int i, int keep = 2) {
    BackupFileOptions options;
    options.held = HeldFiles(dir_.File("onset.db"), {});
    options.reserve_bytes = 0;
    return RotateBackup(dir_.File("onset.db"), backups_, keep, kT0 + i * kHour, "test", options,
                        records_);
  }

  testutil::TempDir dir_;
  std::unique_ptr<Connection> db_;
  std::string backups_;
  MemoryRecords records_;
};

TEST_F(BackupRotationTest, KeepsTheNewestItWroteAndNothingElseGoes) {
  fs::create_directories(backups_);
  std::ofstream(backups_ + "/notes.txt") << "not a backup: left alone\n";
  // Named as a backup, but not one the rotation wrote.
  std::ofstream(backups_ + "/onset-20200101T000000Z.db") << "someone's\n";
  for (int i = 0; i < 4; ++i) {
    absl::StatusOr<RotationResult> r = Rotate(i);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_TRUE(r->spared.empty());
  }
  EXPECT_THAT(Files(backups_),
              ElementsAre("notes.txt", "onset-20200101T000000Z.db", "onset-20261206T140000Z.db",
                          "onset-20261206T150000Z.db"));
  EXPECT_EQ(records_.records_.size(), 2u);
}

TEST_F(BackupRotationTest, ABackupServedSinceOrReplacedOrHeldIsNeverDeleted) {
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(Rotate(i, 3).ok());
  const std::string first = backups_ + "/onset-20261206T120000Z.db";
  const std::string second = backups_ + "/onset-20261206T130000Z.db";
  const std::string third = backups_ + "/onset-20261206T140000Z.db";
  // The first was served since (serving clears the stamp).
  {
    absl::StatusOr<std::unique_ptr<Connection>> served = Connection::Open(first);
    ASSERT_TRUE(served.ok());
    ASSERT_TRUE((*served)->Exec("UPDATE instance SET backup_taken_unix_ms = NULL").ok());
  }
  // The second was replaced by another file of that name (made before the old one goes, so that
  // it cannot get the old one's inode).
  std::ofstream(second + ".new") << "another file\n";
  fs::rename(second + ".new", second);
  // Keep one: the first and the second are due, the third is held by the coordinator.
  BackupFileOptions options;
  options.held = HeldFiles(dir_.File("onset.db"), {{third, "the database the coordinator serves"}});
  options.reserve_bytes = 0;
  absl::StatusOr<RotationResult> r =
      RotateBackup(dir_.File("onset.db"), backups_, 1, kT0 + 3 * kHour, "test", options, records_);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->deleted.empty());
  ASSERT_EQ(r->spared.size(), 3u);
  EXPECT_THAT(r->spared[0], HasSubstr("served it since"));
  EXPECT_THAT(r->spared[1], HasSubstr("no longer the file the rotation wrote"));
  EXPECT_THAT(r->spared[2], HasSubstr("the database the coordinator serves"));
  for (const std::string& f : {first, second, third}) EXPECT_TRUE(fs::exists(f)) << f;
  // They are no longer the rotation's: only the newest is recorded.
  ASSERT_EQ(records_.records_.size(), 1u);
  EXPECT_EQ(records_.records_.begin()->first, backups_ + "/onset-20261206T150000Z.db");
}

}  // namespace
}  // namespace onset::db
