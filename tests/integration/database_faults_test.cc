// The real onsetd on a database that is not what it should be: an empty file, a file that is not
// SQLite, damaged pages, a file or directory it may not write, a database another onsetd already
// serves, and writes that fail while it runs. Each is refused at start (or reported when it
// happens) with a message that names the file and says what to do. Skips when a binary is
// missing from ONSET_BIN_DIR.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tests/integration/harness.h"

namespace onset {
namespace {

namespace fs = std::filesystem;
using ::testing::AllOf;
using testing::Child;
using ::testing::HasSubstr;
using testing::HaveBinaries;
using ::testing::Not;
using testing::Ran;
using testing::Start;
using testing::WaitForFile;
using worker::ExitStatus;
using worker::PosixProcessLauncher;

constexpr auto kExitTimeout = std::chrono::seconds(30);

// Two cells; never trained here.
constexpr char kTinyStudy[] = R"(name: tiny
model: {layers: 2, d_model: 32, heads: 2, seq_len: 64}
train: {batch_tokens: 1K, micro_batch: 4, log_every_steps: 2}
eval: {every_tokens: 10K, heldout_seqs: 4, niah_lengths: [64], niah_samples: 2}
grid:
  arch: [full, "swa:1"]
  window: [16]
  tokens: [20K]
  seeds: 1
)";

// A command's outcome.
// Runs `sql` on the database at `db` (read-write); an error fails the test.
void Exec(const fs::path& db, const std::string& sql) {
  sqlite3* conn = nullptr;
  ASSERT_EQ(sqlite3_open(db.c_str(), &conn), SQLITE_OK) << sqlite3_errmsg(conn);
  char* message = nullptr;
  const int rc = sqlite3_exec(conn, sql.c_str(), nullptr, nullptr, &message);
  EXPECT_EQ(rc, SQLITE_OK) << (message ? message : "") << ": " << sql;
  sqlite3_free(message);
  sqlite3_close(conn);
}

class DatabaseFaultsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name :
         {"ONSET_COORDINATOR", "ONSET_TOKEN", "ONSET_TOKEN_FILE", "ONSET_TLS_CA"}) {
      unsetenv(name);
    }
    dir_ = fs::temp_directory_path() /
           ("onset-db-faults-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    db_ = dir_ / "onset.db";
  }
  void TearDown() override {
    std::error_code ec;
    fs::permissions(dir_, fs::perms::owner_all, fs::perm_options::add, ec);
    if (!HasFailure()) fs::remove_all(dir_);
  }

  // onsetd --db `db` on a free port with `extra` flags, as `unprivileged` asks (see Unprivileged).
  Child Onsetd(const fs::path& db, const std::string& address_file,
               std::vector<std::string> extra = {}, bool unprivileged = false) {
    std::vector<std::string> args = {"--db",        db.string(),      "--listen",
                                     "127.0.0.1:0", "--address-file", address_file};
    args.insert(args.end(), extra.begin(), extra.end());
    if (unprivileged && geteuid() == 0) {
      // Root writes any file whatever its mode: run as nobody, whom the modes do bind.
      args.insert(args.begin(), {"--reuid=65534", "--regid=65534", "--clear-groups", "--",
                                 (fs::path(testing::BinDir()) / "onsetd").string()});
      return Start(launcher_, "/usr/bin/setpriv", std::move(args));
    }
    return Start(launcher_, "onsetd", std::move(args));
  }

  // Waits for `child` to exit and returns how.
  static Ran Finish(Child& child) { return testing::Finish(child, kExitTimeout); }

  // Starts onsetd, expecting it to refuse: how it exited.
  Ran Refused(std::vector<std::string> extra = {}, bool unprivileged = false) {
    Child child = Onsetd(db_, (dir_ / "refused.addr").string(), std::move(extra), unprivileged);
    Ran ran = Finish(child);
    EXPECT_FALSE(fs::exists(dir_ / "refused.addr")) << "onsetd served:\n" << ran.err;
    return ran;
  }

  // Creates the database with onset's schema (an onsetd that starts and stops).
  void CreateDatabase() {
    Child child = Onsetd(db_, (dir_ / "create.addr").string(),
                         {"--token-file", (dir_ / "create.token").string()});
    ASSERT_FALSE(WaitForFile(dir_ / "create.addr").empty()) << child.process->StderrTail();
    ASSERT_TRUE(child.process->Terminate(std::chrono::seconds(10)).Succeeded());
    fs::remove(dir_ / "create.addr");
  }

  bool HaveOnsetd() {
    std::string missing;
    if (HaveBinaries({"onsetd"}, &missing)) return true;
    std::cerr << missing << " not built\n";
    return false;
  }

  fs::path dir_;
  fs::path db_;
  PosixProcessLauncher launcher_;
};

TEST_F(DatabaseFaultsTest, AnEmptyFileIsRefusedUnlessInitEmptyDbIsGiven) {
  if (!HaveOnsetd()) GTEST_SKIP();
  std::ofstream(db_).close();  // 0 bytes: e.g. a copy that failed, or a truncated restore

  const Ran refused = Refused();
  EXPECT_EQ(refused.code, 1);
  EXPECT_THAT(refused.err,
              AllOf(HasSubstr(db_.string()), HasSubstr("empty"), HasSubstr("--init-empty-db")));
  EXPECT_EQ(fs::file_size(db_), 0u) << "the refused file was changed";

  Child started = Onsetd(db_, (dir_ / "addr").string(), {"--init-empty-db"});
  EXPECT_FALSE(WaitForFile(dir_ / "addr").empty()) << started.process->StderrTail();
  EXPECT_TRUE(started.process->Terminate(std::chrono::seconds(10)).Succeeded());
  EXPECT_GT(fs::file_size(db_), 0u);
}

TEST_F(DatabaseFaultsTest, AMissingFileIsStillCreated) {
  if (!HaveOnsetd()) GTEST_SKIP();
  Child started = Onsetd(dir_ / "new" / "onset.db", (dir_ / "addr").string());
  EXPECT_FALSE(WaitForFile(dir_ / "addr").empty()) << started.process->StderrTail();
  EXPECT_TRUE(started.process->Terminate(std::chrono::seconds(10)).Succeeded());
  EXPECT_GT(fs::file_size(dir_ / "new" / "onset.db"), 0u);
}

TEST_F(DatabaseFaultsTest, AFileThatIsNotADatabaseIsRefusedClearly) {
  if (!HaveOnsetd()) GTEST_SKIP();
  {
    std::ofstream out(db_);
    for (int i = 0; i < 200; ++i) out << "step " << i << " loss 3.14\n";  // a log, say
  }
  const Ran refused = Refused();
  EXPECT_EQ(refused.code, 1);
  EXPECT_THAT(refused.err, AllOf(HasSubstr(db_.string()), HasSubstr("not an SQLite database")));
}

TEST_F(DatabaseFaultsTest, DamagedPagesAreRefusedAtStartNamingTheFirstProblems) {
  if (!HaveOnsetd()) GTEST_SKIP();
  CreateDatabase();
  // Enough rows for many pages, then garbage over pages in the middle of the file, as a failing
  // disk or an interrupted copy leaves it. Closing the connection folds the WAL into the file.
  Exec(db_,
       "CREATE TABLE ballast (x BLOB);"
       "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2000) "
       "INSERT INTO ballast SELECT randomblob(200) FROM n;");
  ASSERT_FALSE(fs::exists(dir_ / "onset.db-wal"));
  const auto size = fs::file_size(db_);
  ASSERT_GT(size, 64u * 4096);
  {
    std::fstream file(db_, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(static_cast<std::streamoff>(size / 4096 / 2 * 4096));
    const std::string garbage(3 * 4096, '\xA5');
    file.write(garbage.data(), static_cast<std::streamsize>(garbage.size()));
  }

  const Ran refused = Refused();
  EXPECT_EQ(refused.code, 1);
  EXPECT_THAT(refused.err, AllOf(HasSubstr(db_.string()), HasSubstr("damaged"),
                                 HasSubstr("quick_check: Page ")));
}

TEST_F(DatabaseFaultsTest, AReadOnlyFileIsRefusedAtStart) {
  if (!HaveOnsetd()) GTEST_SKIP();
  CreateDatabase();
  fs::remove(dir_ / "onset.db.lock");  // root's; the daemon's user makes its own
  fs::permissions(db_, fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
  // The directory is writable (by whoever runs onsetd): only the file is read-only.
  fs::permissions(dir_, fs::perms::all);

  const Ran refused = Refused({}, /*unprivileged=*/true);
  EXPECT_EQ(refused.code, 1);
  EXPECT_THAT(refused.err,
              HasSubstr("database " + db_.string() + " is read-only for this process"));
}

TEST_F(DatabaseFaultsTest, AReadOnlyDirectoryIsRefusedAtStart) {
  if (!HaveOnsetd()) GTEST_SKIP();
  CreateDatabase();
  fs::remove(dir_ / "onset.db.lock");
  fs::permissions(db_, fs::perms::all);  // the file itself is writable by anyone
  // r-x for everyone, the owner too.
  fs::permissions(dir_, fs::perms::owner_read | fs::perms::owner_exec | fs::perms::group_read |
                            fs::perms::group_exec | fs::perms::others_read |
                            fs::perms::others_exec);
  const fs::path outside =
      fs::temp_directory_path() / ("onset-db-faults-" + std::to_string(getpid()));
  fs::remove_all(outside);
  fs::create_directories(outside);
  fs::permissions(outside, fs::perms::all);

  Child child = Onsetd(db_, (outside / "addr").string(),
                       {"--token-file", (outside / "onsetd.token").string()},
                       /*unprivileged=*/true);
  const Ran refused = Finish(child);
  EXPECT_FALSE(fs::exists(outside / "addr")) << "onsetd served:\n" << refused.err;
  EXPECT_EQ(refused.code, 1);
  EXPECT_THAT(refused.err, HasSubstr("the directory " + dir_.string()));

  // The lock file is there and writable (left by an earlier start), the directory is not: SQLite
  // cannot make its -wal file.
  fs::permissions(dir_, fs::perms::owner_write, fs::perm_options::add);
  std::ofstream(dir_ / "onset.db.lock").close();
  fs::permissions(dir_ / "onset.db.lock", fs::perms::all);
  fs::permissions(dir_, fs::perms::owner_write, fs::perm_options::remove);
  Child again = Onsetd(db_, (outside / "addr").string(),
                       {"--token-file", (outside / "onsetd.token").string()},
                       /*unprivileged=*/true);
  const Ran refused_again = Finish(again);
  EXPECT_FALSE(fs::exists(outside / "addr")) << "onsetd served:\n" << refused_again.err;
  EXPECT_EQ(refused_again.code, 1);
  EXPECT_THAT(refused_again.err, AllOf(HasSubstr("database " + db_.string() + " cannot be written"),
                                       HasSubstr("its directory " + dir_.string())));
  fs::remove_all(outside);
}

TEST_F(DatabaseFaultsTest, ASecondDaemonIsRefusedAndAKilledOneDoesNotBlockARestart) {
  if (!HaveOnsetd()) GTEST_SKIP();
  Child first = Onsetd(db_, (dir_ / "first.addr").string());
  ASSERT_FALSE(WaitForFile(dir_ / "first.addr").empty()) << first.process->StderrTail();

  // --requeue-running would requeue the first's running cells, whose workers hold live leases.
  const Ran second = Refused({"--requeue-running"});
  EXPECT_EQ(second.code, 1);
  EXPECT_THAT(second.err, AllOf(HasSubstr(db_.string()),
                                HasSubstr("pid " + std::to_string(first.process->pid()))));

  // SIGKILL runs no clean-up: the lock file stays, but the kernel drops the lock with the process.
  ASSERT_EQ(::kill(first.process->pid(), SIGKILL), 0);
  first.process->Wait();
  Child restarted = Onsetd(db_, (dir_ / "restarted.addr").string(), {"--requeue-running"});
  EXPECT_FALSE(WaitForFile(dir_ / "restarted.addr").empty()) << restarted.process->StderrTail();
  EXPECT_TRUE(restarted.process->Terminate(std::chrono::seconds(10)).Succeeded());
}

TEST_F(DatabaseFaultsTest, TheCliReadsADatabaseALiveDaemonHoldsAndAfterItWasKilled) {
  std::string missing;
  if (!HaveBinaries({"onsetd", "onset"}, &missing)) GTEST_SKIP() << missing << " not built";
  const fs::path data = dir_ / "onset-data";
  Child daemon = Onsetd(data / "onset.db", (dir_ / "addr").string());
  const std::string address = WaitForFile(dir_ / "addr");
  ASSERT_FALSE(address.empty()) << daemon.process->StderrTail();
  std::ofstream(dir_ / "tiny.yaml") << kTinyStudy;
  Child submit = Start(launcher_, "onset",
                       {"--coordinator", address, "--token-file", (data / "onsetd.token").string(),
                        "submit", (dir_ / "tiny.yaml").string()});
  ASSERT_EQ(Finish(submit).code, 0);

  // No coordinator.addr in onset-data: `onset status` reads the database itself.
  for (const char* when : {"while onsetd runs", "after onsetd was killed"}) {
    Child status = Start(launcher_, "onset", {"status", "tiny"}, dir_.string());
    const Ran ran = Finish(status);
    EXPECT_EQ(ran.code, 0) << when << ": " << ran.err;
    EXPECT_THAT(ran.err, HasSubstr("reading onset-data/onset.db")) << when;
    EXPECT_THAT(ran.out, HasSubstr("queued")) << when;
    if (daemon.process->WaitFor(std::chrono::milliseconds(0))) break;
    ASSERT_EQ(::kill(daemon.process->pid(), SIGKILL), 0);
    daemon.process->Wait();
  }
}

TEST_F(DatabaseFaultsTest, AFailedWriteIsLoggedAndTheCliPrintsWhyNotCannotReach) {
  std::string missing;
  if (!HaveBinaries({"onsetd", "onset"}, &missing)) GTEST_SKIP() << missing << " not built";
  Child daemon = Onsetd(db_, (dir_ / "addr").string());
  const std::string address = WaitForFile(dir_ / "addr");
  ASSERT_FALSE(address.empty()) << daemon.process->StderrTail();
  std::ofstream(dir_ / "tiny.yaml") << kTinyStudy;

  // Another program holds the write lock (say, `sqlite3 onset.db` left in a transaction): every
  // write of onsetd waits out its busy timeout and fails.
  sqlite3* holder = nullptr;
  ASSERT_EQ(sqlite3_open(db_.c_str(), &holder), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(holder, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr), SQLITE_OK)
      << sqlite3_errmsg(holder);
  Child submit = Start(launcher_, "onset",
                       {"--coordinator", address, "--token-file", (dir_ / "onsetd.token").string(),
                        "submit", (dir_ / "tiny.yaml").string()});
  const Ran ran = Finish(submit);
  sqlite3_exec(holder, "ROLLBACK", nullptr, nullptr, nullptr);
  sqlite3_close(holder);

  EXPECT_EQ(ran.code, 1);
  EXPECT_THAT(ran.err, AllOf(HasSubstr("database write failed"), HasSubstr("database is locked"),
                             HasSubstr(db_.string()), Not(HasSubstr("cannot reach"))));
  const ExitStatus stopped = daemon.process->Terminate(std::chrono::seconds(10));
  EXPECT_TRUE(stopped.Succeeded()) << stopped.ToString();
  EXPECT_THAT(daemon.process->StderrTail(),
              AllOf(HasSubstr("database write failed"), HasSubstr("database is locked")));
  // With no coordinator there at all, the CLI does say so.
  Child unreachable =
      Start(launcher_, "onset",
            {"--coordinator", address, "--token-file", (dir_ / "onsetd.token").string(), "status"});
  const Ran gone = Finish(unreachable);
  EXPECT_EQ(gone.code, 1);
  EXPECT_THAT(gone.err, HasSubstr("cannot reach the coordinator at " + address));

  // Once the lock is gone, the same submission goes through.
  Child again = Onsetd(db_, (dir_ / "again.addr").string());
  const std::string again_address = WaitForFile(dir_ / "again.addr");
  ASSERT_FALSE(again_address.empty()) << again.process->StderrTail();
  Child resubmit =
      Start(launcher_, "onset",
            {"--coordinator", again_address, "--token-file", (dir_ / "onsetd.token").string(),
             "submit", (dir_ / "tiny.yaml").string()});
  EXPECT_EQ(Finish(resubmit).code, 0);
}

}  // namespace
}  // namespace onset
