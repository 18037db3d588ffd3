// The --nproc supervisor, with /bin/sh scripts standing in for the ranks.
#include "model/distributed/dist_launch.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "tests/testing/temp_dir.h"

namespace onset::model {
namespace {

using Clock = std::chrono::steady_clock;

class DistLaunchTest : public ::testing::Test {
 protected:
  std::string RankFile(int rank) const { return dir_ + "/rank" + std::to_string(rank); }

  // Runs `script` with sh as each of `nproc` ranks ($1 = this test's directory); returns the
  // exit code, with the supervisor's stderr in err_ and its duration in seconds_.
  int Launch(const std::string& script, int nproc, std::chrono::milliseconds grace) {
    LaunchOptions o;
    o.program = "/bin/sh";
    o.args = {"-c", script, "sh", dir_};
    o.nproc = nproc;
    o.grace = grace;
    o.tmp_dir = dir_;
    const auto t0 = Clock::now();
    ::testing::internal::CaptureStderr();
    const int code = LaunchLocalRanks(o);
    err_ = ::testing::internal::GetCapturedStderr();
    seconds_ = std::chrono::duration<double>(Clock::now() - t0).count();
    return code;
  }

  const testutil::TempDir tmp_;
  const std::string dir_ = tmp_.path();
  std::string err_;
  double seconds_ = 0;
};

TEST_F(DistLaunchTest, EveryRankGetsItsPlaceAndTheRendezvousIsCleanedUp) {
  // Variables a launcher above us may have set must not leak into the ranks.
  ::setenv("RANK", "9", 1);
  ::setenv("MASTER_ADDR", "elsewhere", 1);
  const int code =
      Launch(R"(echo "$RANK $LOCAL_RANK $WORLD_SIZE $LOCAL_WORLD_SIZE ${MASTER_ADDR-none} )"
             R"($ONSET_STORE_FILE $ONSET_LAUNCHER_PID" > "$1/rank$RANK")",
             3, std::chrono::milliseconds(1000));
  ::unsetenv("RANK");
  ::unsetenv("MASTER_ADDR");
  ASSERT_EQ(code, 0) << err_;
  std::string store;
  for (int r = 0; r < 3; ++r) {
    std::ifstream in(RankFile(r));
    int rank, local_rank, world, local_world, launcher;
    std::string master, file;
    ASSERT_TRUE(in >> rank >> local_rank >> world >> local_world >> master >> file >> launcher)
        << r;
    EXPECT_EQ(rank, r);
    EXPECT_EQ(local_rank, r);
    EXPECT_EQ(world, 3);
    EXPECT_EQ(local_world, 3);
    EXPECT_EQ(master, "none");
    EXPECT_EQ(launcher, ::getpid());
    EXPECT_EQ(file.rfind(dir_ + "/onset-train-", 0), 0u) << file;
    if (r > 0) {
      EXPECT_EQ(file, store);  // one rendezvous for all
    }
    store = file;
    EXPECT_NE(err_.find("started rank " + std::to_string(r) + " of 3 (pid "), std::string::npos);
  }
  struct stat st;
  EXPECT_NE(::stat(store.substr(0, store.rfind('/')).c_str(), &st), 0) << "left behind";
}

TEST_F(DistLaunchTest, AFailingRankStopsTheOthersAndKeepsItsExitCode) {
  const int code = Launch(R"(if [ "$RANK" = 1 ]; then exit 3; fi; exec sleep 30)", 3,
                          std::chrono::milliseconds(200));
  EXPECT_EQ(code, 3);
  EXPECT_LT(seconds_, 10);
  EXPECT_NE(err_.find("onset-train: rank 1 of 3 (pid "), std::string::npos) << err_;
  EXPECT_NE(err_.find("ended: exit code 3; stopping the other ranks"), std::string::npos) << err_;
  EXPECT_EQ(err_.find("onset-train: rank 0 of 3"), std::string::npos) << "only the first failure";
}

TEST_F(DistLaunchTest, AKilledRankIsNamedWithItsSignal) {
  const int code = Launch(R"(if [ "$RANK" = 0 ]; then kill -KILL $$; fi; exec sleep 30)", 2,
                          std::chrono::milliseconds(200));
  EXPECT_EQ(code, 1);
  EXPECT_LT(seconds_, 10);
  EXPECT_NE(err_.find("rank 0 of 2 (pid "), std::string::npos) << err_;
  EXPECT_NE(err_.find("ended: killed by signal 9"), std::string::npos) << err_;
}

TEST_F(DistLaunchTest, RanksThatIgnoreSigtermAreKilled) {
  const int code = Launch(R"(trap '' TERM; if [ "$RANK" = 1 ]; then exit 5; fi; sleep 30)", 2,
                          std::chrono::milliseconds(300));
  EXPECT_EQ(code, 5);
  EXPECT_GE(seconds_, 0.6);  // one grace to stop by itself, one after SIGTERM
  EXPECT_LT(seconds_, 10);
}

TEST_F(DistLaunchTest, SignalsToTheSupervisorGoToEveryRank) {
  const int code = Launch(R"(if [ "$RANK" = 0 ]; then kill -TERM $PPID; fi; exec sleep 30)", 2,
                          std::chrono::milliseconds(5000));
  EXPECT_EQ(code, 128 + 15);
  EXPECT_LT(seconds_, 4);  // the ranks got SIGTERM at once, not after the grace
  EXPECT_NE(err_.find("stopped by signal 15"), std::string::npos) << err_;
}

TEST_F(DistLaunchTest, AProgramThatCannotStart) {
  LaunchOptions o;
  o.program = dir_ + "/no-such-program";
  o.nproc = 2;
  o.tmp_dir = dir_;
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(LaunchLocalRanks(o), 1);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("rank 0: cannot start " + o.program), std::string::npos) << err;
}

TEST(SelfExecutableTest, IsThisTestBinary) {
  const std::string self = SelfExecutable("fallback");
  EXPECT_NE(self, "fallback");
  EXPECT_NE(self.find("model_tests"), std::string::npos) << self;
}

}  // namespace
}  // namespace onset::model
