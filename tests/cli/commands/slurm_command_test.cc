// `onset slurm up` end to end but for Slurm: a StudyService on a loopback port answers with the
// study's counts, and a fake sbatch (a shell script) records its arguments and the ONSET_*
// environment it was given, then prints a job id or fails as sbatch does.
#include "cli/commands/slurm_command.h"

#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <memory>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli/exit_codes.h"
#include "tests/testing/temp_dir.h"

namespace onset::cli {
namespace {

using ::testing::HasSubstr;

// GetStudy answers with the cells it was given, in one page.
class FakeStudies final : public v1::StudyService::Service {
 public:
  grpc::Status GetStudy(grpc::ServerContext*, const v1::GetStudyRequest* request,
                        v1::GetStudyResponse* response) override {
    auto it = studies.find(request->name());
    if (it == studies.end()) {
      return grpc::Status(grpc::StatusCode::NOT_FOUND, "no study named '" + request->name() + "'");
    }
    *response = it->second;
    return grpc::Status::OK;
  }
  std::map<std::string, v1::GetStudyResponse> studies;
};

class SlurmUpCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    AddStudy("other", {{v1::CELL_STATE_QUEUED, 50}});
    // A trunk counts as a cell to run; so do branches waiting for it.
    AddStudy("x", {{v1::CELL_STATE_QUEUED, 2},
                   {v1::CELL_STATE_BACKOFF, 2},
                   {v1::CELL_STATE_RUNNING, 4},
                   {v1::CELL_STATE_SUCCEEDED, 1}});
    v1::Cell* trunk = service_.studies["x"].add_cells();
    trunk->set_state(v1::CELL_STATE_QUEUED);
    trunk->set_role("trunk");
    AddStudy("done", {{v1::CELL_STATE_SUCCEEDED, 3}, {v1::CELL_STATE_FAILED, 1}});
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    address_ = "127.0.0.1:" + std::to_string(port);
    client_ = std::make_unique<StudyClient>(address_, common::ClientSecurity{});

    script_ = tmp_.Write("onset-worker.sbatch", "#!/bin/sh\nexit 0\n");
    options_.study = "x";
    options_.script = script_;
    options_.executable = "/opt/onset/build/bin/onset";
    options_.sbatch = FakeSbatch("echo '4242;cluster'\n");
    access_.coordinator = "login1:7070";
    access_.token_file = "/shared/onsetd.token";
  }
  void TearDown() override { server_->Shutdown(); }

  void AddStudy(const std::string& name, const std::map<v1::CellState, int>& counts) {
    v1::GetStudyResponse& study = service_.studies[name];
    study.mutable_study()->set_name(name);
    for (const auto& [state, n] : counts) {
      for (int i = 0; i < n; ++i) study.add_cells()->set_state(state);
    }
  }

  // A fake sbatch that records what it got into argv and env, then runs `body`.
  std::string FakeSbatch(const std::string& body) {
    const std::string path = tmp_.Write("sbatch",
                                        "#!/bin/sh\n"
                                        "printf '%s\\n' \"$@\" > '" +
                                            tmp_.File("argv") +
                                            "'\n"
                                            "env | grep -E "
                                            "'^ONSET_(COORDINATOR|TOKEN|TOKEN_FILE|TLS_CA|BIN|EXIT_"
                                            "WHEN_IDLE|DEVICES)=' | sort > '" +
                                            tmp_.File("env") + "'\n" + body);
    chmod(path.c_str(), 0755);
    return path;
  }

  std::string Recorded(const std::string& name) {
    std::ifstream file(tmp_.File(name));
    if (!file) return "(not run)";
    std::stringstream text;
    text << file.rdbuf();
    return text.str();
  }

  int Run() {
    out_.str("");
    err_.str("");
    return SlurmUpCommand(*client_, options_, access_, out_, err_);
  }

  testutil::TempDir tmp_;
  FakeStudies service_;
  std::unique_ptr<grpc::Server> server_;
  std::string address_;
  std::unique_ptr<StudyClient> client_;
  std::string script_;
  SlurmUpOptions options_;
  WorkerAccess access_;
  std::ostringstream out_, err_;
};

TEST_F(SlurmUpCommandTest, SubmitsOneArraySizedToTheQueuedCells) {
  options_.cells_per_job = 2;
  options_.partition = "gpu";
  options_.sbatch_args = {"--time=1:00:00", "--gres=gpu:2"};
  ASSERT_EQ(Run(), kExitOk) << err_.str();
  EXPECT_EQ(out_.str(),
            "submitted Slurm array job 4242: 3 workers for 5 queued cells of study x (they exit "
            "after 300 s without work)\n");
  EXPECT_EQ(err_.str(), "");
  EXPECT_EQ(Recorded("argv"),
            "--parsable\n--array=0-2\n--job-name=onset-x\n--partition=gpu\n"
            "--time=1:00:00\n--gres=gpu:2\n" +
                script_ + "\n");
  EXPECT_EQ(Recorded("env"),
            "ONSET_BIN=/opt/onset/build/bin\n"
            "ONSET_COORDINATOR=login1:7070\n"
            "ONSET_EXIT_WHEN_IDLE=300\n"
            "ONSET_TOKEN_FILE=/shared/onsetd.token\n");
}

TEST_F(SlurmUpCommandTest, AtMostMaxJobsAndJson) {
  options_.study = "other";
  options_.max_jobs = 4;
  options_.cpu = true;
  options_.exit_when_idle_s = 30;
  options_.json = true;
  options_.sbatch = FakeSbatch("echo 77\n");
  ASSERT_EQ(Run(), kExitOk) << err_.str();
  const nlohmann::json json = nlohmann::json::parse(out_.str());
  EXPECT_EQ(json["job_id"], "77");
  EXPECT_EQ(json["workers"], 4);
  EXPECT_EQ(json["queued"], 50);
  EXPECT_EQ(json["command"], nlohmann::json({options_.sbatch, "--parsable", "--array=0-3",
                                             "--job-name=onset-other", "--gres=none", script_}));
  EXPECT_THAT(Recorded("env"), HasSubstr("ONSET_DEVICES=cpu\n"));
  EXPECT_THAT(Recorded("env"), HasSubstr("ONSET_EXIT_WHEN_IDLE=30\n"));
}

TEST_F(SlurmUpCommandTest, NoQueuedCellsSubmitsNothing) {
  options_.study = "done";
  EXPECT_EQ(Run(), kExitOk);
  EXPECT_EQ(out_.str(), "study done has no queued cells: no workers submitted\n");
  EXPECT_EQ(Recorded("argv"), "(not run)");
}

TEST_F(SlurmUpCommandTest, AnUnknownStudyIsNamed) {
  options_.study = "nope";
  EXPECT_EQ(Run(), kExitFailure);
  EXPECT_EQ(err_.str(), "no study named 'nope'\n");
  EXPECT_EQ(Recorded("argv"), "(not run)");
}

TEST_F(SlurmUpCommandTest, AnUnreachableCoordinator) {
  server_->Shutdown();
  client_ = std::make_unique<StudyClient>("127.0.0.1:1", common::ClientSecurity{},
                                          std::chrono::seconds(5));
  EXPECT_EQ(Run(), kExitFailure);
  EXPECT_THAT(err_.str(), HasSubstr("cannot reach the coordinator at 127.0.0.1:1"));
}

TEST_F(SlurmUpCommandTest, AFailingSbatchShowsItsStderr) {
  options_.sbatch =
      FakeSbatch("echo 'sbatch: error: invalid partition specified: gpux' >&2\nexit 1\n");
  EXPECT_EQ(Run(), kExitFailure);
  EXPECT_EQ(out_.str(), "");
  EXPECT_THAT(err_.str(), HasSubstr("sbatch failed (exit code 1): " + options_.sbatch +
                                    " --parsable --array=0-4"));
  EXPECT_THAT(err_.str(), HasSubstr("\nsbatch: error: invalid partition specified: gpux\n"));
}

TEST_F(SlurmUpCommandTest, AnSbatchThatPrintsNoJobId) {
  options_.sbatch = FakeSbatch("echo 'Submitted batch job 12'\n");
  EXPECT_EQ(Run(), kExitFailure);
  EXPECT_THAT(err_.str(), HasSubstr("sbatch printed \"Submitted batch job 12\", not a job id"));
}

TEST_F(SlurmUpCommandTest, NoSbatch) {
  options_.sbatch = tmp_.File("no-sbatch");
  EXPECT_EQ(Run(), kExitFailure);
  EXPECT_EQ(err_.str(), "cannot run " + options_.sbatch +
                            ": No such file or directory (is this a Slurm login node? "
                            "ONSET_SBATCH names another sbatch)\n");
}

TEST_F(SlurmUpCommandTest, AnSbatchThatHangsIsKilled) {
  options_.sbatch = FakeSbatch("sleep 600\n");
  EXPECT_EQ(SlurmUpCommand(*client_, options_, access_, out_, err_, std::chrono::milliseconds(200)),
            kExitFailure);
  EXPECT_EQ(err_.str(), options_.sbatch + " did not finish within 0.2 s: killed it\n");
}

TEST_F(SlurmUpCommandTest, NoScript) {
  options_.script = tmp_.File("missing.sbatch");
  EXPECT_EQ(Run(), kExitFailure);
  EXPECT_EQ(err_.str(), "--script: no file " + options_.script + "\n");
  EXPECT_EQ(Recorded("argv"), "(not run)");
}

TEST_F(SlurmUpCommandTest, DryRunPrintsTheCommandAndRunsNothing) {
  options_.dry_run = true;
  options_.allow_loopback = true;
  options_.sbatch = "sbatch";
  access_.coordinator = "127.0.0.1:7070";
  EXPECT_EQ(Run(), kExitOk);
  EXPECT_EQ(out_.str(),
            "would submit 5 workers for 5 queued cells of study x:\n"
            "sbatch --parsable --array=0-4 --job-name=onset-x " +
                script_ +
                "\n"
                "  ONSET_BIN=/opt/onset/build/bin\n"
                "  ONSET_COORDINATOR=127.0.0.1:7070\n"
                "  ONSET_EXIT_WHEN_IDLE=300\n"
                "  ONSET_TOKEN_FILE=/shared/onsetd.token\n");
  EXPECT_EQ(err_.str(),
            "note: 127.0.0.1:7070 is a loopback address: only workers on this machine can reach "
            "it (--allow-loopback)\n");
  EXPECT_EQ(Recorded("argv"), "(not run)");
}

// A token in ONSET_TOKEN would be stored with every job's environment in Slurm's records: the
// workers get a file instead, and a token that is not one is refused before anything runs.
TEST_F(SlurmUpCommandTest, ATokenOnlyInTheEnvironmentIsRefused) {
  access_.token_file.clear();
  access_.token_from_env = true;
  EXPECT_EQ(Run(), kExitBadInput);
  EXPECT_THAT(err_.str(), HasSubstr("Slurm would keep in every worker job's recorded environment"));
  EXPECT_EQ(Recorded("argv"), "(not run)");
}

// Workers on other nodes could never reach a loopback coordinator, and would hold their nodes
// doing nothing: refused unless the user says the cluster is this machine.
TEST_F(SlurmUpCommandTest, ALoopbackCoordinatorIsRefusedUnlessAllowed) {
  access_.coordinator = "127.0.0.1:7070";
  EXPECT_EQ(Run(), kExitBadInput);
  EXPECT_EQ(err_.str(),
            "127.0.0.1:7070 is a loopback address, which workers on other nodes cannot reach: "
            "pass --coordinator with a name the nodes resolve (and onsetd --listen there), or "
            "--allow-loopback when the cluster is this machine\n");
  EXPECT_EQ(Recorded("argv"), "(not run)");
}

}  // namespace
}  // namespace onset::cli
