#include "cli/address.h"

#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

#include <gtest/gtest.h>

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

TEST_F(AddressTest, ARunningOnsetRunWinsOverItsDatabase) {
  WriteAddressFile("127.0.0.1:5555\n");
  std::ofstream(dir_ / kDatabaseFileName) << "";
  Probe probe(true);
  DataSource source = ResolveDataSource("", nullptr, dir_.string(), probe.Fn());
  EXPECT_EQ(source.address, "127.0.0.1:5555");
  EXPECT_EQ(source.database, "");
  EXPECT_EQ(probe.asked, std::vector<std::string>{"127.0.0.1:5555"});
}

TEST_F(AddressTest, AStaleAddressFileFallsBackToTheDatabase) {
  WriteAddressFile("127.0.0.1:5555\n");
  std::ofstream(dir_ / kDatabaseFileName) << "";
  Probe probe;
  DataSource source = ResolveDataSource("", "", dir_.string(), probe.Fn());
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
  source = ResolveDataSource("", nullptr, dir_.string(), stale.Fn());
  EXPECT_EQ(source.address, "");
  EXPECT_EQ(source.database, "");
  EXPECT_EQ(source.stale_address, "127.0.0.1:5555");
  EXPECT_EQ(stale.asked, std::vector<std::string>{"127.0.0.1:5555"});
}

TEST_F(AddressTest, ADirectoryNamedLikeTheDatabaseIsNoDatabase) {
  fs::create_directories(dir_ / kDatabaseFileName);
  Probe dead;
  EXPECT_EQ(ResolveDataSource("", nullptr, dir_.string(), dead.Fn()).database, "");
}

}  // namespace
}  // namespace onset::cli
