#include "model/distributed/dist_env.h"

#include <gtest/gtest.h>

#include <map>

namespace onset::model {
namespace {

std::optional<std::string> Read(const std::map<std::string, std::string>& vars, DistEnv* out) {
  return ReadDistEnv(
      [&](const char* name) -> const char* {
        auto it = vars.find(name);
        return it == vars.end() ? nullptr : it->second.c_str();
      },
      out);
}

TEST(DistEnvTest, NoWorldSizeIsASingleProcess) {
  DistEnv d;
  ASSERT_EQ(Read({{"RANK", "3"}, {"MASTER_ADDR", "x"}}, &d), std::nullopt);
  EXPECT_FALSE(d.distributed());
  EXPECT_EQ(d.rank, 0);
  ASSERT_EQ(Read({{"WORLD_SIZE", "1"}}, &d), std::nullopt);
  EXPECT_FALSE(d.distributed());
}

TEST(DistEnvTest, ReadsTorchrunVariables) {
  DistEnv d;
  ASSERT_EQ(Read({{"WORLD_SIZE", "8"},
                  {"RANK", "5"},
                  {"LOCAL_RANK", "1"},
                  {"LOCAL_WORLD_SIZE", "4"},
                  {"MASTER_ADDR", "node0"},
                  {"MASTER_PORT", "29500"}},
                 &d),
            std::nullopt);
  EXPECT_TRUE(d.distributed());
  EXPECT_EQ(d.world_size, 8);
  EXPECT_EQ(d.rank, 5);
  EXPECT_EQ(d.local_rank, 1);
  EXPECT_EQ(d.local_world_size, 4);
  EXPECT_EQ(d.master_addr, "node0");
  EXPECT_EQ(d.master_port, 29500);
  EXPECT_EQ(d.store_file, "");
}

TEST(DistEnvTest, AStoreFileReplacesTheMaster) {
  DistEnv d;
  ASSERT_EQ(Read({{"WORLD_SIZE", "2"},
                  {"RANK", "0"},
                  {"LOCAL_RANK", "0"},
                  {"ONSET_STORE_FILE", "/tmp/x/store"}},
                 &d),
            std::nullopt);
  EXPECT_EQ(d.store_file, "/tmp/x/store");
  EXPECT_EQ(d.local_world_size, 1);
}

TEST(DistEnvTest, ErrorsNameTheVariable) {
  DistEnv d;
  const std::map<std::string, std::string> ok = {{"WORLD_SIZE", "2"},
                                                 {"RANK", "1"},
                                                 {"LOCAL_RANK", "1"},
                                                 {"MASTER_ADDR", "h"},
                                                 {"MASTER_PORT", "1234"}};
  ASSERT_EQ(Read(ok, &d), std::nullopt);
  auto without = [&](const std::string& name) {
    auto v = ok;
    v.erase(name);
    return Read(v, &d).value_or("ok");
  };
  auto with = [&](const std::string& name, const std::string& value) {
    auto v = ok;
    v[name] = value;
    return Read(v, &d).value_or("ok");
  };
  EXPECT_EQ(with("WORLD_SIZE", "0"), "WORLD_SIZE: must be a number of ranks >= 1, got '0'");
  EXPECT_EQ(without("RANK"), "RANK: must be a rank between 0 and 1, got nothing");
  EXPECT_EQ(with("RANK", "2"), "RANK: must be a rank between 0 and 1, got '2'");
  EXPECT_EQ(without("LOCAL_RANK"),
            "LOCAL_RANK: must be this rank's index on its machine, got nothing");
  EXPECT_EQ(with("LOCAL_WORLD_SIZE", "1"),
            "LOCAL_RANK: must be this rank's index on its machine (below LOCAL_WORLD_SIZE), got "
            "'1'");
  EXPECT_EQ(with("LOCAL_WORLD_SIZE", "3"),
            "LOCAL_WORLD_SIZE: must be between 1 and WORLD_SIZE (2), got '3'");
  EXPECT_EQ(without("MASTER_ADDR"),
            "MASTER_ADDR: must name rank 0's host (or ONSET_STORE_FILE a shared file) when "
            "WORLD_SIZE is 2");
  EXPECT_EQ(with("MASTER_PORT", "70000"),
            "MASTER_PORT: must be a port number between 1 and 65535, got '70000'");
  EXPECT_EQ(with("MASTER_PORT", "12ab"),
            "MASTER_PORT: must be a port number between 1 and 65535, got '12ab'");
}

TEST(DistEnvTest, LoopbackHosts) {
  EXPECT_TRUE(IsLoopback("localhost"));
  EXPECT_TRUE(IsLoopback("127.0.0.1"));
  EXPECT_TRUE(IsLoopback("127.1.2.3"));
  EXPECT_TRUE(IsLoopback("::1"));
  EXPECT_FALSE(IsLoopback("10.0.0.1"));
  EXPECT_FALSE(IsLoopback("node127"));
}

}  // namespace
}  // namespace onset::model
