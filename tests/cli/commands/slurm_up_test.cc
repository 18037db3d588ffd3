// `onset slurm up`'s plan: the array's size, the sbatch command in its order, the environment
// the worker script reads, where the script is found, and what sbatch --parsable prints.
#include "cli/commands/slurm_up.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "tests/testing/temp_dir.h"

namespace onset::cli {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Pair;
using ::testing::UnorderedElementsAre;

v1::Cell CellOf(v1::CellState state, const std::string& role = "cell",
                bool waiting_for_trunk = false) {
  v1::Cell cell;
  cell.set_state(state);
  cell.set_role(role);
  cell.set_waiting_for_trunk(waiting_for_trunk);
  return cell;
}

// A branch still waiting for its trunk's checkpoint needs no node yet.
TEST(SlurmUpQueuedCellsTest, QueuedBackoffAndTrunksButNoBranchWaitingForItsTrunk) {
  v1::GetStudyResponse study;
  // The study's counts leave trunks out; the cells are what counts here.
  (*study.mutable_study()->mutable_cells_by_state())["queued"] = 1;
  for (const v1::Cell& cell :
       {CellOf(v1::CELL_STATE_QUEUED), CellOf(v1::CELL_STATE_BACKOFF),
        CellOf(v1::CELL_STATE_QUEUED, "trunk"), CellOf(v1::CELL_STATE_QUEUED, "branch", true),
        CellOf(v1::CELL_STATE_RUNNING, "trunk"), CellOf(v1::CELL_STATE_RUNNING),
        CellOf(v1::CELL_STATE_SUCCEEDED), CellOf(v1::CELL_STATE_FAILED),
        CellOf(v1::CELL_STATE_DIVERGED), CellOf(v1::CELL_STATE_CANCELLED)}) {
    *study.add_cells() = cell;
  }
  EXPECT_EQ(QueuedCells(study), 3);
  *study.add_cells() = CellOf(v1::CELL_STATE_QUEUED, "branch", false);  // its checkpoint is there
  EXPECT_EQ(QueuedCells(study), 4);
  EXPECT_EQ(QueuedCells(v1::GetStudyResponse()), 0);
}

TEST(SlurmUpArraySizeTest, OneJobPerCellsPerJobRoundedUpAndCapped) {
  EXPECT_EQ(ArraySize(0, 1, 8), 0);
  EXPECT_EQ(ArraySize(1, 1, 8), 1);
  EXPECT_EQ(ArraySize(5, 1, 8), 5);
  EXPECT_EQ(ArraySize(5, 2, 8), 3);
  EXPECT_EQ(ArraySize(8, 4, 8), 2);
  EXPECT_EQ(ArraySize(9, 4, 8), 3);
  EXPECT_EQ(ArraySize(100, 1, 8), 8);
  EXPECT_EQ(ArraySize(100, 3, 10000), 34);
  EXPECT_EQ(ArraySize(3, 8, 8), 1);
  EXPECT_EQ(ArraySize(int64_t{1} << 40, 1, 10000), 10000);
}

SlurmUpOptions Options() {
  SlurmUpOptions options;
  options.study = "x";
  options.executable = "/opt/onset/build/bin/onset";
  return options;
}

WorkerAccess Access() {
  WorkerAccess access;
  access.coordinator = "login1:7070";
  access.token_file = "/shared/onset/onsetd.token";
  return access;
}

TEST(SlurmUpPlanTest, OnsetsArgumentsThenTheUsersThenTheScript) {
  SlurmUpOptions options = Options();
  options.partition = "gpu";
  options.sbatch_args = {"--time=1:00:00", "--job-name=mine", "--gres=gpu:8"};
  const SbatchPlan plan = PlanSbatch(options, 3, "/opt/onset/w.sbatch", Access());
  EXPECT_THAT(plan.argv, ElementsAre("sbatch", "--parsable", "--array=0-2", "--job-name=onset-x",
                                     "--partition=gpu", "--time=1:00:00", "--job-name=mine",
                                     "--gres=gpu:8", "/opt/onset/w.sbatch"));
}

TEST(SlurmUpPlanTest, OneWorkerAndNoPartition) {
  SlurmUpOptions options = Options();
  options.sbatch = "/usr/local/bin/sbatch";
  EXPECT_THAT(PlanSbatch(options, 1, "/s", Access()).argv,
              ElementsAre("/usr/local/bin/sbatch", "--parsable", "--array=0-0",
                          "--job-name=onset-x", "/s"));
}

TEST(SlurmUpPlanTest, TheEnvironmentTellsTheWorkersWhereAndHow) {
  const SbatchPlan plan = PlanSbatch(Options(), 2, "/s", Access());
  EXPECT_THAT(plan.set, UnorderedElementsAre(Pair("ONSET_COORDINATOR", "login1:7070"),
                                             Pair("ONSET_TOKEN_FILE", "/shared/onset/onsetd.token"),
                                             Pair("ONSET_BIN", "/opt/onset/build/bin"),
                                             Pair("ONSET_EXIT_WHEN_IDLE", "300")));
  EXPECT_THAT(plan.unset, IsEmpty());
}

TEST(SlurmUpPlanTest, CpuTlsIdleTimeAndAnOnsetBinAlreadySet) {
  SlurmUpOptions options = Options();
  options.cpu = true;
  options.exit_when_idle_s = 60;
  options.env_bin = "/elsewhere/bin";
  WorkerAccess access = Access();
  access.tls_ca = "/shared/onset/ca.pem";
  const SbatchPlan plan = PlanSbatch(options, 2, "/s", access);
  // No GPU asked for, whatever the job script's #SBATCH lines say (--sbatch-arg still can).
  EXPECT_THAT(plan.argv, ElementsAre("sbatch", "--parsable", "--array=0-1", "--job-name=onset-x",
                                     "--gres=none", "/s"));
  EXPECT_THAT(plan.set, UnorderedElementsAre(Pair("ONSET_COORDINATOR", "login1:7070"),
                                             Pair("ONSET_TOKEN_FILE", "/shared/onset/onsetd.token"),
                                             Pair("ONSET_TLS_CA", "/shared/onset/ca.pem"),
                                             Pair("ONSET_BIN", "/elsewhere/bin"),
                                             Pair("ONSET_EXIT_WHEN_IDLE", "60"),
                                             Pair("ONSET_DEVICES", "cpu")));
}

TEST(SlurmUpPlanTest, ATokenFromTheEnvironmentStaysThereAndIsNeverShown) {
  WorkerAccess access = Access();
  access.token_file.clear();
  access.token_from_env = true;
  const SbatchPlan plan = PlanSbatch(Options(), 2, "/s", access);
  EXPECT_EQ(plan.set.count("ONSET_TOKEN_FILE"), 0u);
  EXPECT_EQ(plan.set.count("ONSET_TOKEN"), 0u);
  EXPECT_THAT(plan.unset, IsEmpty());
  EXPECT_EQ(DescribePlan(plan, access),
            "sbatch --parsable --array=0-1 --job-name=onset-x /s\n"
            "  ONSET_BIN=/opt/onset/build/bin\n"
            "  ONSET_COORDINATOR=login1:7070\n"
            "  ONSET_EXIT_WHEN_IDLE=300\n"
            "  ONSET_TOKEN (passed on as it is set)\n");
}

TEST(SlurmUpPlanTest, ATokenFileFlagOverridesOnsetTokenForTheWorkersToo) {
  WorkerAccess access = Access();
  access.drop_env_token = true;
  const SbatchPlan plan = PlanSbatch(Options(), 2, "/s", access);
  EXPECT_THAT(plan.unset, ElementsAre("ONSET_TOKEN"));
  EXPECT_THAT(DescribePlan(plan, access),
              HasSubstr("  ONSET_TOKEN removed (the token file comes first)\n"));
}

class WorkerAccessTest : public ::testing::Test {
 protected:
  testutil::TempDir tmp_;
};

TEST_F(WorkerAccessTest, TheTokenSourceTheClientUsedInItsOrder) {
  common::TokenSources sources;
  sources.flag_file = "/a/flag.token";
  sources.env_token = "t0k3n";
  sources.env_token_file = "/a/env.token";
  sources.default_file = tmp_.Write("onsetd.token", "x");
  WorkerAccess access = ResolveWorkerAccess("h:1", sources, "");
  EXPECT_EQ(access.coordinator, "h:1");
  EXPECT_EQ(access.token_file, "/a/flag.token");
  EXPECT_FALSE(access.token_from_env);
  EXPECT_TRUE(access.drop_env_token);

  sources.flag_file.clear();
  access = ResolveWorkerAccess("h:1", sources, "");
  EXPECT_EQ(access.token_file, "");
  EXPECT_TRUE(access.token_from_env);
  EXPECT_FALSE(access.drop_env_token);

  sources.env_token.clear();
  access = ResolveWorkerAccess("h:1", sources, "");
  EXPECT_EQ(access.token_file, "/a/env.token");
  EXPECT_FALSE(access.token_from_env);

  sources.env_token_file.clear();
  EXPECT_EQ(ResolveWorkerAccess("h:1", sources, "").token_file, sources.default_file);

  // A default file is used only when it is there.
  sources.default_file = tmp_.File("missing.token");
  access = ResolveWorkerAccess("h:1", sources, "");
  EXPECT_EQ(access.token_file, "");
  EXPECT_FALSE(access.token_from_env);
}

TEST_F(WorkerAccessTest, RelativePathsBecomeAbsolute) {
  common::TokenSources sources;
  sources.flag_file = "onset-data/onsetd.token";
  const WorkerAccess access = ResolveWorkerAccess("h:1", sources, "certs/../ca.pem");
  const fs::path cwd = fs::current_path();
  EXPECT_EQ(access.token_file, (cwd / "onset-data/onsetd.token").string());
  EXPECT_EQ(access.tls_ca, (cwd / "ca.pem").string());
}

class WorkerScriptTest : public ::testing::Test {
 protected:
  // A build tree and an installation, each with an onset executable.
  void SetUp() override {
    fs::create_directories(root_ / "src/build/bin");
    fs::create_directories(root_ / "src/deploy/slurm");
    fs::create_directories(root_ / "prefix/bin");
    fs::create_directories(root_ / "prefix/share/onset");
  }
  std::string Touch(const fs::path& path) {
    tmp_.Write(fs::relative(path, root_).string(), "#!/bin/sh\n");
    return path.string();
  }

  testutil::TempDir tmp_;
  fs::path root_{tmp_.path()};
};

TEST_F(WorkerScriptTest, NextToABuildTree) {
  const std::string script = Touch(root_ / "src/deploy/slurm/onset-worker.sbatch");
  EXPECT_EQ(FindWorkerScript("", "", (root_ / "src/build/bin/onset").string()).value(), script);
}

TEST_F(WorkerScriptTest, NextToAnInstallation) {
  const std::string script = Touch(root_ / "prefix/share/onset/onset-worker.sbatch");
  EXPECT_EQ(FindWorkerScript("", "", (root_ / "prefix/bin/onset").string()).value(), script);
}

TEST_F(WorkerScriptTest, TheFlagThenTheEnvironmentComeFirst) {
  Touch(root_ / "src/deploy/slurm/onset-worker.sbatch");
  const std::string flag = Touch(root_ / "mine.sbatch");
  const std::string env = Touch(root_ / "env.sbatch");
  const std::string onset = (root_ / "src/build/bin/onset").string();
  EXPECT_EQ(FindWorkerScript(flag, env, onset).value(), flag);
  EXPECT_EQ(FindWorkerScript("", env, onset).value(), env);
}

TEST_F(WorkerScriptTest, ANamedScriptMustExist) {
  Touch(root_ / "src/deploy/slurm/onset-worker.sbatch");
  const std::string onset = (root_ / "src/build/bin/onset").string();
  const std::string missing = (root_ / "nope.sbatch").string();
  absl::StatusOr<std::string> script = FindWorkerScript(missing, "", onset);
  EXPECT_EQ(script.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(script.status().message(), "--script: no file " + missing);
  script = FindWorkerScript("", missing, onset);
  EXPECT_EQ(script.status().message(), "ONSET_SLURM_SCRIPT: no file " + missing);
  // A directory is not a script.
  script = FindWorkerScript(root_.string(), "", onset);
  EXPECT_EQ(script.status().code(), absl::StatusCode::kNotFound);
}

TEST_F(WorkerScriptTest, NoneSaysWhereItLookedAndWhatToDo) {
  absl::StatusOr<std::string> script =
      FindWorkerScript("", "", (root_ / "prefix/bin/onset").string());
  EXPECT_EQ(script.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(script.status().message(),
            "no worker job script at " + (root_ / "deploy/slurm/onset-worker.sbatch").string() +
                " or " + (root_ / "prefix/share/onset/onset-worker.sbatch").string() +
                ": pass --script PATH or set ONSET_SLURM_SCRIPT (onset's source tree has it in "
                "deploy/slurm/onset-worker.sbatch)");
}

TEST(SlurmUpLoopbackTest, AddressesOnlyThisMachineReaches) {
  for (const char* address :
       {"127.0.0.1:7070", "127.1.2.3:1", "localhost:7070", "LOCALHOST:1", "[::1]:7070",
        "0.0.0.0:7070", "[::]:7070", "unix:/tmp/s", "dns:///localhost:7070"}) {
    EXPECT_TRUE(IsLoopbackAddress(address)) << address;
  }
  for (const char* address : {"login1:7070", "login1.cluster:7070", "10.0.0.5:7070",
                              "[fe80::1]:7070", "128.0.0.1:7070", "localhost.example:7070"}) {
    EXPECT_FALSE(IsLoopbackAddress(address)) << address;
  }
}

TEST(SlurmUpJobIdTest, ParsableOutput) {
  EXPECT_EQ(ParseJobId("1234\n").value(), "1234");
  EXPECT_EQ(ParseJobId("1234;cluster\n").value(), "1234");
  EXPECT_EQ(ParseJobId("  77;c ").value(), "77");
  for (const char* bad : {"", "\n", "Submitted batch job 12\n", "12a", ";cluster", "12\n13\n"}) {
    absl::StatusOr<std::string> id = ParseJobId(bad);
    EXPECT_EQ(id.status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_EQ(ParseJobId("Submitted batch job 12\n").status().message(),
            "sbatch printed \"Submitted batch job 12\", not a job id");
}

TEST(SlurmUpShellCommandTest, QuotesWordsAShellWouldSplit) {
  EXPECT_EQ(ShellCommand({"sbatch", "--array=0-2", "/a b/s", "it's", ""}),
            "sbatch --array=0-2 '/a b/s' 'it'\\''s' ''");
}

}  // namespace
}  // namespace onset::cli
