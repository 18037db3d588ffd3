#include "cli/address.h"

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

namespace onset::cli {
namespace {

namespace fs = std::filesystem;

class AddressTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("onset-address-" + std::to_string(getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void WriteAddressFile(const std::string& text) {
    std::ofstream(dir_ / kAddressFileName) << text;
  }
  fs::path dir_;
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

}  // namespace
}  // namespace onset::cli
