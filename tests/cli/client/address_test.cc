#include "cli/client/address.h"

#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <unistd.h>

#include <cstdlib>

#include "tests/testing/fifo.h"
#include "tests/testing/temp_dir.h"

namespace onset::cli {
namespace {

namespace fs = std::filesystem;

class AddressTest : public ::testing::Test {
 protected:
  void WriteAddressFile(const std::string& text) { std::ofstream(dir_ / kAddressFileName) << text; }
  testutil::TempDir tmp_;
  fs::path dir_{tmp_.path()};
};

TEST_F(AddressTest, FlagWinsOverEverything) {
  WriteAddressFile("127.0.0.1:5555\n");
  EXPECT_EQ(ResolveCoordinatorAddress("host:1", "env:2", dir_.string()), "host:1");
}

TEST_F(AddressTest, EnvironmentBeforeAddressFile) {
  WriteAddressFile("127.0.0.1:5555\n");
  EXPECT_EQ(ResolveCoordinatorAddress("", "env:2", dir_.string()), "env:2");
}

TEST_F(AddressTest, AddressFileOfARunningOnsetRun) {
  WriteAddressFile("127.0.0.1:5555\n");
  EXPECT_EQ(ResolveCoordinatorAddress("", nullptr, dir_.string()), "127.0.0.1:5555");
  EXPECT_EQ(ResolveCoordinatorAddress("", "", dir_.string()), "127.0.0.1:5555");
}

TEST_F(AddressTest, DefaultLast) {
  EXPECT_EQ(ResolveCoordinatorAddress("", nullptr, dir_.string()), "127.0.0.1:7070");
  WriteAddressFile("");
  EXPECT_EQ(ResolveCoordinatorAddress("", nullptr, dir_.string()), "127.0.0.1:7070");
}

TEST_F(AddressTest, TheTokenOfAnOnsetRunGoesOnlyToItsAddress) {
  EXPECT_EQ(DefaultTokenFile("", nullptr, dir_.string()), "");  // no onset run
  WriteAddressFile("127.0.0.1:5555\n");
  EXPECT_EQ(DefaultTokenFile("", nullptr, dir_.string()), (dir_ / "onsetd.token").string());
  EXPECT_EQ(DefaultTokenFile("", "", dir_.string()), (dir_ / "onsetd.token").string());
  EXPECT_EQ(DefaultTokenFile("host:1", nullptr, dir_.string()), "");
  EXPECT_EQ(DefaultTokenFile("", "env:2", dir_.string()), "");
}

TEST_F(AddressTest, OnsetRunWritesTheAddressFileItsCommandsRead) {
  ASSERT_TRUE(cli::WriteAddressFile(dir_.string(), "127.0.0.1:5555").ok());
  EXPECT_EQ(ResolveCoordinatorAddress("", nullptr, dir_.string()), "127.0.0.1:5555");
  ASSERT_TRUE(cli::WriteAddressFile(dir_.string(), "127.0.0.1:6666").ok());  // replaced
  EXPECT_EQ(ResolveCoordinatorAddress("", nullptr, dir_.string()), "127.0.0.1:6666");
  std::ifstream in(dir_ / kAddressFileName);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), "127.0.0.1:6666\n");
  EXPECT_FALSE(fs::exists(dir_ / (std::string(kAddressFileName) + ".tmp")));
}

TEST_F(AddressTest, AnAddressFileThatCannotBeWrittenIsNamed) {
  // A directory where the file should go: the rename into place fails.
  fs::create_directories(dir_ / kAddressFileName / "x");
  absl::Status written = cli::WriteAddressFile(dir_.string(), "127.0.0.1:5555");
  EXPECT_EQ(written.code(), absl::StatusCode::kUnavailable);
  const std::string path = (dir_ / kAddressFileName).string();
  EXPECT_NE(written.message().find("cannot write the address file " + path + ": "),
            std::string::npos)
      << written;
  EXPECT_FALSE(fs::exists(path + ".tmp"));
}

// A probe that records the addresses it was asked about and answers `live`.
struct Probe {
  explicit Probe(bool answers = false) : live(answers) {}
  bool live;
  std::vector<std::string> asked;
  std::function<bool(const std::string&)> Fn() {
    return [this](const std::string& address) {
      asked.push_back(address);
      return live;
    };
  }
};

TEST_F(AddressTest, NamedCoordinatorsAreNeverProbedNorReplacedByTheDatabase) {
  WriteAddressFile("127.0.0.1:5555\n");
  std::ofstream(dir_ / kDatabaseFileName) << "";
  Probe probe;
  DataSource flag = ResolveDataSource("host:1", "env:2", dir_.string(), probe.Fn());
  EXPECT_EQ(flag.address, "host:1");
  EXPECT_EQ(flag.database, "");
  DataSource env = ResolveDataSource("", "env:2", dir_.string(), probe.Fn());
  EXPECT_EQ(env.address, "env:2");
  EXPECT_EQ(env.database, "");
  EXPECT_TRUE(probe.asked.empty());
}

const auto kServed = [] { return true; };

TEST_F(AddressTest, ARunningOnsetRunWinsOverItsDatabase) {
  WriteAddressFile("127.0.0.1:5555\n");
  std::ofstream(dir_ / kDatabaseFileName) << "";
  Probe probe(true);
  DataSource source = ResolveDataSource("", nullptr, dir_.string(), probe.Fn(), kServed);
  EXPECT_EQ(source.address, "127.0.0.1:5555");
  EXPECT_EQ(source.database, "");
  EXPECT_EQ(probe.asked, std::vector<std::string>{"127.0.0.1:5555"});
}

TEST_F(AddressTest, AStaleAddressFileFallsBackToTheDatabase) {
  WriteAddressFile("127.0.0.1:5555\n");
  std::ofstream(dir_ / kDatabaseFileName) << "";
  Probe probe;
  DataSource source = ResolveDataSource("", "", dir_.string(), probe.Fn(), kServed);
  EXPECT_EQ(source.address, "");
  EXPECT_EQ(source.database, (dir_ / kDatabaseFileName).string());
  EXPECT_EQ(probe.asked, std::vector<std::string>{"127.0.0.1:5555"});  // only once
}

TEST_F(AddressTest, AFinishedRunLeavesOnlyItsDatabase) {
  std::ofstream(dir_ / kDatabaseFileName) << "";
  Probe probe(true);  // even if something answers at the default address
  DataSource source = ResolveDataSource("", nullptr, dir_.string(), probe.Fn());
  EXPECT_EQ(source.database, (dir_ / kDatabaseFileName).string());
  EXPECT_TRUE(probe.asked.empty());
}

TEST_F(AddressTest, WithoutAnyDataTheDefaultAddressMustAnswer) {
  Probe live(true);
  DataSource source = ResolveDataSource("", nullptr, dir_.string(), live.Fn());
  EXPECT_EQ(source.address, kDefaultAddress);
  EXPECT_EQ(live.asked, std::vector<std::string>{kDefaultAddress});

  Probe dead;
  source = ResolveDataSource("", nullptr, dir_.string(), dead.Fn());
  EXPECT_EQ(source.address, "");
  EXPECT_EQ(source.database, "");
  EXPECT_EQ(source.stale_address, "");

  WriteAddressFile("127.0.0.1:5555\n");  // a stale file and no database
  Probe stale;
  source = ResolveDataSource("", nullptr, dir_.string(), stale.Fn(), kServed);
  EXPECT_EQ(source.address, "");
  EXPECT_EQ(source.database, "");
  EXPECT_EQ(source.stale_address, "127.0.0.1:5555");
  EXPECT_EQ(stale.asked, std::vector<std::string>{"127.0.0.1:5555"});
}

// A killed `onset run` leaves its address file, and its port may be taken by anyone since: the
// file is followed only while the database's lock says its coordinator lives, and only to
// loopback. A file not followed is not even probed.
TEST_F(AddressTest, AnAddressFileIsFollowedOnlyToALiveCoordinatorOnLoopback) {
  std::ofstream(dir_ / kDatabaseFileName) << "";
  WriteAddressFile("127.0.0.1:5555\n");
  Probe dead_run(true);
  DataSource source =
      ResolveDataSource("", nullptr, dir_.string(), dead_run.Fn(), [] { return false; });
  EXPECT_EQ(source.address, "");
  EXPECT_EQ(source.database, (dir_ / kDatabaseFileName).string());
  EXPECT_TRUE(dead_run.asked.empty());

  for (const char* elsewhere : {"10.1.2.3:5555", "example.org:5555", "0.0.0.0:5555"}) {
    WriteAddressFile(std::string(elsewhere) + "\n");
    Probe probe(true);
    source = ResolveDataSource("", nullptr, dir_.string(), probe.Fn(), kServed);
    EXPECT_EQ(source.address, "") << elsewhere;
    EXPECT_TRUE(probe.asked.empty()) << elsewhere;
  }
}

TEST_F(AddressTest, TheDataDirIsServedWhileItsDatabaseLockIsHeld) {
  EXPECT_FALSE(DataDirServed(dir_.string()));  // no lock file
  const std::string lock = (dir_ / (std::string(kDatabaseFileName) + ".lock")).string();
  std::ofstream(lock) << "pid 1 on h\n";
  EXPECT_FALSE(DataDirServed(dir_.string()));  // a file left behind holds nothing
  const int fd = ::open(lock.c_str(), O_RDWR | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::flock(fd, LOCK_EX | LOCK_NB), 0);
  EXPECT_TRUE(DataDirServed(dir_.string()));
  ::close(fd);
  EXPECT_FALSE(DataDirServed(dir_.string()));
}

// ONSET_TOKEN in the environment, meant for a coordinator the user names, never goes to the
// address of ./onset-data/coordinator.addr.
TEST_F(AddressTest, TheAddressFilesCoordinatorGetsOnlyTheTokenFileBesideIt) {
  ::setenv("ONSET_TOKEN", "a-token-for-another-coordinator-0123456789", 1);
  common::TokenSources sources = ClientTokenSources("", "", nullptr, dir_.string());
  EXPECT_EQ(sources.env_token, "a-token-for-another-coordinator-0123456789");  // no address file
  EXPECT_EQ(sources.default_file, "");

  WriteAddressFile("127.0.0.1:5555\n");
  sources = ClientTokenSources("my.token", "", nullptr, dir_.string());
  EXPECT_EQ(sources.env_token, "");
  EXPECT_EQ(sources.flag_file, "");
  EXPECT_EQ(sources.default_file, (dir_ / "onsetd.token").string());

  sources = ClientTokenSources("my.token", "host:1", nullptr, dir_.string());  // named
  EXPECT_EQ(sources.flag_file, "my.token");
  EXPECT_EQ(sources.env_token, "a-token-for-another-coordinator-0123456789");
  EXPECT_EQ(sources.default_file, "");
  ::unsetenv("ONSET_TOKEN");
}

TEST_F(AddressTest, AFifoAsTheAddressFileIsNotWaitedOn) {
  testutil::MakeFifo((dir_ / kAddressFileName).string());
  std::string address;
  EXPECT_TRUE(testutil::ReturnsWithoutAWriter((dir_ / kAddressFileName).string(), [&] {
    address = ResolveCoordinatorAddress("", nullptr, dir_.string());
  }));
  EXPECT_EQ(address, kDefaultAddress);
}

TEST_F(AddressTest, ADirectoryNamedLikeTheDatabaseIsNoDatabase) {
  fs::create_directories(dir_ / kDatabaseFileName);
  Probe dead;
  EXPECT_EQ(ResolveDataSource("", nullptr, dir_.string(), dead.Fn()).database, "");
}

}  // namespace
}  // namespace onset::cli
