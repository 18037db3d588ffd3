// The real onsetd's rotating backups (--backup-every, --backup-dir, --backup-keep): copies keep
// coming while it serves, only the newest are kept, each passes integrity_check, and a second
// onsetd serves a copy as it is. Skips when a binary is missing.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include "tests/integration/harness.h"

namespace onset {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

constexpr char kStudy[] = R"(name: kept
model: {layers: 2, d_model: 32, heads: 2, seq_len: 64}
train: {batch_tokens: 1K, micro_batch: 4}
eval: {every_tokens: 10K, heldout_seqs: 4, niah_lengths: [64], niah_samples: 2}
grid: {arch: [full, "swa:1"], window: [16], tokens: [20K], seeds: 1}
)";

std::vector<std::string> Backups(const fs::path& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) names.push_back(e.path().filename());
  std::sort(names.begin(), names.end());
  return names;
}

std::string IntegrityCheck(const fs::path& db) {
  sqlite3* conn = nullptr;
  std::string result = "cannot open";
  if (sqlite3_open_v2(db.c_str(), &conn, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(conn, "PRAGMA integrity_check", -1, &stmt, nullptr) == SQLITE_OK &&
        sqlite3_step(stmt) == SQLITE_ROW) {
      result = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
    }
    sqlite3_finalize(stmt);
  }
  sqlite3_close(conn);
  return result;
}

TEST(BackupTest, RotatingBackupsKeepTheNewestAndAnotherOnsetdServesOne) {
  std::string missing;
  if (!testing::HaveBinaries({"onsetd", "onset"}, &missing))
    GTEST_SKIP() << missing << " not built";
  for (const char* name : {"ONSET_COORDINATOR", "ONSET_TOKEN", "ONSET_TOKEN_FILE"}) unsetenv(name);
  const fs::path dir = fs::temp_directory_path() / ("onset-backup-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "served");
  const fs::path backups = dir / "backups";
  worker::PosixProcessLauncher launcher;
  testing::Daemon daemon = testing::StartDaemon(
      launcher, dir / "served",
      {"--backup-every", "1s", "--backup-dir", backups.string(), "--backup-keep", "2"});
  ASSERT_FALSE(daemon.address.empty());
  std::ofstream(dir / "kept.yaml") << kStudy;
  testing::Child submit =
      testing::Start(launcher, "onset",
                     {"--coordinator", daemon.address, "--token-file", daemon.token_file, "submit",
                      (dir / "kept.yaml").string()});
  ASSERT_EQ(testing::Finish(submit, std::chrono::seconds(60)).code, 0);

  // Three backups after the submission: two remain, the newest.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  std::vector<std::string> seen;
  while (std::chrono::steady_clock::now() < deadline) {
    const std::string log = daemon.child.process->StderrTail();
    size_t count = 0;
    for (size_t at = log.find("backup: "); at != std::string::npos;
         at = log.find("backup: ", at + 1)) {
      ++count;
    }
    if (count >= 3) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  const std::vector<std::string> left = Backups(backups);
  ASSERT_EQ(left.size(), 2u) << daemon.child.process->StderrTail();
  for (const std::string& name : left) {
    EXPECT_THAT(name, ::testing::MatchesRegex("onset-[0-9]{8}T[0-9]{6}Z\\.db"));
    EXPECT_EQ(IntegrityCheck(backups / name), "ok") << name;
  }

  // Another onsetd serves the newest copy as it is.
  fs::create_directories(dir / "restored");
  fs::copy_file(backups / left.back(), dir / "restored" / "onset.db");
  testing::Daemon restored = testing::StartDaemon(launcher, dir / "restored");
  ASSERT_FALSE(restored.address.empty());
  testing::Child status = testing::Start(
      launcher, "onset",
      {"--coordinator", restored.address, "--token-file", restored.token_file, "status"});
  const testing::Ran ran = testing::Finish(status, std::chrono::seconds(60));
  EXPECT_EQ(ran.code, 0) << ran.err;
  EXPECT_THAT(ran.out, HasSubstr("kept"));
  for (testing::Daemon* d : {&daemon, &restored}) {
    const worker::ExitStatus stopped = d->child.process->Terminate(std::chrono::seconds(10));
    EXPECT_TRUE(stopped.Succeeded()) << stopped.ToString();
  }
  if (!::testing::Test::HasFailure()) fs::remove_all(dir);
}

}  // namespace
}  // namespace onset
