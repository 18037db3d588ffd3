// `onset submit` on files that are not study files: refused before anything is sent, with the
// exit codes of docs/cli.md (1: the file cannot be read; 2: it is not a study file).
#include "cli/commands/study_commands.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli/client/study_client.h"
#include "cli/exit_codes.h"
#include "tests/testing/temp_dir.h"

namespace onset::cli {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class SubmitFileTest : public ::testing::Test {
 protected:
  // Runs `onset submit --dry-run FILE` against an address where nothing listens: every case
  // here must end before a call is made.
  int Submit(const std::string& file) {
    StudyClient client("127.0.0.1:1", common::ClientSecurity{}, std::chrono::seconds(5));
    out_.str("");
    err_.str("");
    return SubmitCommand(client, file, /*dry_run=*/true, /*json=*/false, out_, err_);
  }

  testutil::TempDir tmp_;
  fs::path dir_{tmp_.path()};
  std::ostringstream out_, err_;
};

TEST_F(SubmitFileTest, AMissingFileCannotBeRead) {
  const std::string path = (dir_ / "nope.yaml").string();
  EXPECT_EQ(Submit(path), kExitFailure);
  EXPECT_EQ(err_.str(), "cannot open " + path + ": No such file or directory\n");
}

TEST_F(SubmitFileTest, ADirectoryIsNotAStudyFile) {
  EXPECT_EQ(Submit(dir_.string()), kExitBadInput);
  EXPECT_EQ(err_.str(), dir_.string() + " is a directory, not a study file\n");
}

TEST_F(SubmitFileTest, NotUtf8SaysWhere) {
  const std::string path = (dir_ / "latin1.yaml").string();
  std::ofstream(path, std::ios::binary) << "name: caf\xe9\n";
  EXPECT_EQ(Submit(path), kExitBadInput);
  EXPECT_EQ(err_.str(), path + ":1: the file is not UTF-8 text (byte 0xe9 at offset 9)\n");
}

TEST_F(SubmitFileTest, AnEndlessDeviceIsReadOnlyUpToTheLimit) {
  EXPECT_EQ(Submit("/dev/zero"), kExitBadInput);
  EXPECT_THAT(err_.str(), HasSubstr("/dev/zero:1: the file is more than 1048576 bytes"));
}

// `onset workers --json` names each worker's Slurm job, empty for a worker outside Slurm.
TEST(JsonTest, WorkersCarryTheirSlurmJob) {
  v1::ListWorkersResponse list;
  v1::Worker* in_slurm = list.add_workers();
  in_slurm->set_id("w-1");
  in_slurm->set_slurm_job("1234_5");
  list.add_workers()->set_id("w-2");
  const std::string json = ToJson(list);
  EXPECT_THAT(json, HasSubstr("\"slurm_job\": \"1234_5\""));
  EXPECT_THAT(json, HasSubstr("\"slurm_job\": \"\""));
}

}  // namespace
}  // namespace onset::cli
