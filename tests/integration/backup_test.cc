// Backups on the real onsetd and `onset backup`: rotating copies keep coming while it serves and
// only the newest it wrote are kept, each passes integrity_check, and a second onsetd serves a
// copy; a backup never replaces the served database or its files (by any name) nor deletes a
// backup that is being served, needs no room on the database's disk, and a client that stops
// reading loses its place while a second backup meanwhile is told the coordinator is busy.
// Skips when a binary is missing.
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

#include "common/grpc_auth.h"
#include "onset/v1/onset.grpc.pb.h"
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

// A directory of its own for one test, removed when the test passed.
class BackupScratch {
 public:
  explicit BackupScratch(const std::string& name)
      : dir_(fs::temp_directory_path() /
             ("onset-backup-" + name + "-" + std::to_string(getpid()))) {
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "served");
  }
  ~BackupScratch() {
    if (!::testing::Test::HasFailure()) fs::remove_all(dir_);
  }
  const fs::path& dir() const { return dir_; }

 private:
  fs::path dir_;
};

testing::Ran Cli(worker::PosixProcessLauncher& launcher, const testing::Daemon& daemon,
                 std::vector<std::string> args) {
  std::vector<std::string> all = {"--coordinator", daemon.address, "--token-file",
                                  daemon.token_file};
  all.insert(all.end(), args.begin(), args.end());
  testing::Child child = testing::Start(launcher, "onset", all);
  return testing::Finish(child, std::chrono::seconds(120));
}

void Submit(worker::PosixProcessLauncher& launcher, const testing::Daemon& daemon,
            const fs::path& dir, const std::string& yaml) {
  std::ofstream(dir / "study.yaml") << yaml;
  const testing::Ran ran = Cli(launcher, daemon, {"submit", (dir / "study.yaml").string()});
  ASSERT_EQ(ran.code, 0) << ran.err;
}

void Stop(testing::Daemon& daemon) {
  const worker::ExitStatus stopped = daemon.child.process->Terminate(std::chrono::seconds(10));
  EXPECT_TRUE(stopped.Succeeded()) << stopped.ToString() << daemon.child.process->StderrTail();
}

bool HaveAll() {
  std::string missing;
  for (const char* name : {"ONSET_COORDINATOR", "ONSET_TOKEN", "ONSET_TOKEN_FILE"}) unsetenv(name);
  return testing::HaveBinaries({"onsetd", "onset", "libonset-sim-full-disk.so"}, &missing);
}

TEST(BackupTest, ABackupNeverReplacesTheServedDatabaseOrItsFilesByAnyName) {
  if (!HaveAll()) GTEST_SKIP() << "a binary is not built";
  BackupScratch scratch("served");
  const fs::path served = scratch.dir() / "served";
  // A webhook URL file (a secret onsetd holds, like its token file); nothing listens there.
  const fs::path urls = scratch.dir() / "notify-urls";
  std::ofstream(urls) << "http://127.0.0.1:9/hook\n";
  fs::permissions(urls, fs::perms::owner_read | fs::perms::owner_write);
  worker::PosixProcessLauncher launcher;
  testing::Daemon daemon =
      testing::StartDaemon(launcher, served, {"--notify-url-file", urls.string()});
  ASSERT_FALSE(daemon.address.empty());
  Submit(launcher, daemon, scratch.dir(), kStudy);
  fs::create_symlink(served / "onset.db", scratch.dir() / "link.db");
  fs::create_hard_link(served / "onset.db", scratch.dir() / "hard.db");
  for (const fs::path& out :
       {served / "onset.db", served / "onset.db-wal", served / "onset.db.lock",
        scratch.dir() / "link.db", scratch.dir() / "hard.db", served / "onsetd.token", urls}) {
    const testing::Ran ran = Cli(launcher, daemon, {"backup", "--out", out.string()});
    EXPECT_EQ(ran.code, 2) << out << ": " << ran.out << ran.err;
    EXPECT_THAT(ran.err, HasSubstr("cannot write a backup to " + out.string())) << ran.err;
  }
  // It serves on, the study whole, and starts again on its database.
  testing::Ran status = Cli(launcher, daemon, {"status", "kept"});
  EXPECT_EQ(status.code, 0) << status.err;
  EXPECT_EQ(IntegrityCheck(served / "onset.db"), "ok");
  Stop(daemon);
  fs::remove(served / "addr");
  testing::Daemon again = testing::StartDaemon(launcher, served);
  ASSERT_FALSE(again.address.empty());
  status = Cli(launcher, again, {"status", "kept"});
  EXPECT_EQ(status.code, 0) << status.err;
  EXPECT_THAT(status.out, HasSubstr("kept"));
  Stop(again);
}

TEST(BackupTest, TheRotationNeverDeletesTheBackupItServes) {
  if (!HaveAll()) GTEST_SKIP() << "a binary is not built";
  BackupScratch scratch("rotation");
  const fs::path backups = scratch.dir() / "backups";
  worker::PosixProcessLauncher launcher;
  testing::Daemon first = testing::StartDaemon(
      launcher, scratch.dir() / "served",
      {"--backup-every", "1s", "--backup-dir", backups.string(), "--backup-keep", "2"});
  ASSERT_FALSE(first.address.empty());
  Submit(launcher, first, scratch.dir(), kStudy);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (Backups(backups).size() < 2 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  Stop(first);
  const std::vector<std::string> written = Backups(backups);
  ASSERT_GE(written.size(), 1u);
  // Restored where it lies, with the rotation on in the same directory.
  const fs::path copy = backups / written.back();
  const std::string token = (scratch.dir() / "served" / "onsetd.token").string();
  std::vector<std::string> args = {"--db",           copy.string(),
                                   "--listen",       "127.0.0.1:0",
                                   "--address-file", (scratch.dir() / "addr2").string(),
                                   "--token-file",   token,
                                   "--backup-every", "1s",
                                   "--backup-dir",   backups.string(),
                                   "--backup-keep",  "2"};
  testing::Child child = testing::Start(launcher, "onsetd", args);
  testing::Daemon second;
  second.child = std::move(child);
  second.address = testing::WaitForFile(scratch.dir() / "addr2");
  second.token_file = token;
  ASSERT_FALSE(second.address.empty()) << second.child.process->StderrTail();
  // Four more rotations: at 84b5e0f the second deleted the file being served.
  const auto later = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  size_t rotations = 0;
  while (rotations < 4 && std::chrono::steady_clock::now() < later) {
    const std::string log = second.child.process->StderrTail();
    rotations = 0;
    for (size_t at = log.find("backup: /"); at != std::string::npos;
         at = log.find("backup: /", at + 1)) {
      ++rotations;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_GE(rotations, 4u) << second.child.process->StderrTail();
  EXPECT_TRUE(fs::exists(copy)) << "the rotation deleted the database it serves";
  Stop(second);
  testing::Child again_child = testing::Start(launcher, "onsetd", args);
  testing::Daemon again;
  again.child = std::move(again_child);
  fs::remove(scratch.dir() / "addr2");
  again.address = testing::WaitForFile(scratch.dir() / "addr2");
  again.token_file = token;
  ASSERT_FALSE(again.address.empty()) << again.child.process->StderrTail();
  const testing::Ran status = Cli(launcher, again, {"status", "kept"});
  EXPECT_EQ(status.code, 0) << status.err;
  Stop(again);
}

TEST(BackupTest, ABackupNeedsNoRoomOnTheDatabasesDisk) {
  if (!HaveAll()) GTEST_SKIP() << "a binary is not built";
  BackupScratch scratch("full");
  const fs::path flag = scratch.dir() / "disk-full";
  worker::PosixProcessLauncher launcher;
  const fs::path served = scratch.dir() / "served";
  std::vector<std::string> args = {"--db",           (served / "onset.db").string(),
                                   "--listen",       "127.0.0.1:0",
                                   "--address-file", (served / "addr").string()};
  testing::Daemon daemon;
  daemon.child = testing::Start(
      launcher, "onsetd", args, "",
      {{"LD_PRELOAD", (fs::path(testing::BinDir()) / "libonset-sim-full-disk.so").string()},
       {"ONSET_SIM_FULL_DISK", flag.string()}});
  daemon.address = testing::WaitForFile(served / "addr");
  daemon.token_file = (served / "onsetd.token").string();
  ASSERT_FALSE(daemon.address.empty());
  Submit(launcher, daemon, scratch.dir(), kStudy);
  std::ofstream(flag) << "full\n";  // every write of onsetd to a file fails from now on
  fs::create_directories(scratch.dir() / "roomy");
  const fs::path out = scratch.dir() / "roomy" / "copy.db";
  const testing::Ran ran = Cli(launcher, daemon, {"backup", "--out", out.string()});
  fs::remove(flag);
  EXPECT_EQ(ran.code, 0) << ran.err;
  EXPECT_EQ(IntegrityCheck(out), "ok");
  // Nothing was left beside the database.
  for (const auto& e : fs::directory_iterator(served)) {
    EXPECT_THAT(e.path().filename().string(), ::testing::Not(HasSubstr("backup"))) << e.path();
  }
  Stop(daemon);
}

TEST(BackupTest, AClientThatStopsReadingLosesItsPlaceAndTheNextIsToldTheCoordinatorIsBusy) {
  if (!HaveAll()) GTEST_SKIP() << "a binary is not built";
  BackupScratch scratch("stalled");
  worker::PosixProcessLauncher launcher;
  testing::Daemon daemon = testing::StartDaemon(launcher, scratch.dir() / "served",
                                                {"--stalled-reader-limit-ms", "8000"});
  ASSERT_FALSE(daemon.address.empty());
  // Thousands of cells: a database of several MB, more than the stream's flow-control windows
  // hold, so that a client that reads nothing blocks the copy.
  std::string big = kStudy;
  big.replace(big.find("seeds: 1"), 8, "seeds: 4000");
  Submit(launcher, daemon, scratch.dir(), big);
  auto channel = common::NewClientChannel(daemon.address, common::ClientSecurity{daemon.token, ""});
  auto stub = v1::StudyService::NewStub(channel);
  grpc::ClientContext stalled;
  std::unique_ptr<grpc::ClientReader<v1::BackupChunk>> reader =
      stub->Backup(&stalled, v1::BackupRequest());  // and never read
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const auto asked = std::chrono::steady_clock::now();
  const testing::Ran busy =
      Cli(launcher, daemon, {"backup", "--out", (scratch.dir() / "b1.db").string()});
  EXPECT_EQ(busy.code, 1) << busy.err;
  EXPECT_THAT(busy.err, HasSubstr("busy taking another backup"));
  EXPECT_THAT(busy.err, ::testing::Not(HasSubstr("cannot reach")));
  // Past the limit the stalled call is cancelled and the place is free.
  std::this_thread::sleep_until(asked + std::chrono::seconds(9));
  const testing::Ran after =
      Cli(launcher, daemon, {"backup", "--out", (scratch.dir() / "b2.db").string()});
  EXPECT_EQ(after.code, 0) << after.err;
  EXPECT_EQ(IntegrityCheck(scratch.dir() / "b2.db"), "ok");
  stalled.TryCancel();
  reader->Finish();
  Stop(daemon);
}

}  // namespace
}  // namespace onset
