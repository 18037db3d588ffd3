#include "worker/attempt_dir.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/testing/temp_dir.h"

namespace onset::worker {
namespace {

namespace fs = std::filesystem;
using ::testing::StartsWith;

class AttemptDirTest : public ::testing::Test {
 protected:
  static JobSpec Job() {
    JobSpec job;
    job.cell_id = "00c0ffee";
    job.attempt = 3;
    job.config_json = "{\"model\":{}}";
    return job;
  }

  static std::string Read(const fs::path& path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }

  testutil::TempDir tmp_;
  fs::path work_dir_ = fs::path(tmp_.path()) / "work";  // made by the code under test
};

TEST_F(AttemptDirTest, CreatesTheAttemptWithItsConfigBesideTheCellsCheckpoints) {
  absl::StatusOr<AttemptDir> attempt = PrepareAttemptDir(work_dir_.string(), Job());
  ASSERT_TRUE(attempt.ok()) << attempt.status();
  EXPECT_TRUE(attempt->dir.is_absolute());
  EXPECT_EQ(attempt->dir, work_dir_ / "00c0ffee" / "attempt-3");
  EXPECT_EQ(attempt->config_path, attempt->dir / "config.json");
  EXPECT_EQ(Read(attempt->config_path), "{\"model\":{}}");
  EXPECT_EQ(attempt->checkpoint_dir, work_dir_ / "00c0ffee" / "checkpoints");
  EXPECT_FALSE(attempt->discarded_checkpoints);
}

TEST_F(AttemptDirTest, KeepsTheCheckpointsUnlessFresh) {
  const fs::path checkpoints = work_dir_ / "00c0ffee" / "checkpoints";
  fs::create_directories(checkpoints);
  std::ofstream(checkpoints / "ckpt-000000001000.pt") << "old";
  ASSERT_TRUE(PrepareAttemptDir(work_dir_.string(), Job()).ok());
  EXPECT_TRUE(fs::exists(checkpoints / "ckpt-000000001000.pt"));

  JobSpec fresh = Job();
  fresh.fresh = true;
  absl::StatusOr<AttemptDir> attempt = PrepareAttemptDir(work_dir_.string(), fresh);
  ASSERT_TRUE(attempt.ok()) << attempt.status();
  EXPECT_TRUE(attempt->discarded_checkpoints);
  EXPECT_FALSE(fs::exists(checkpoints));
}

TEST_F(AttemptDirTest, UsesTheCheckpointDirectoryTheCoordinatorNames) {
  JobSpec job = Job();
  job.checkpoint_dir = (work_dir_ / "shared" / "00c0ffee").string();
  absl::StatusOr<AttemptDir> attempt = PrepareAttemptDir(work_dir_.string(), job);
  ASSERT_TRUE(attempt.ok()) << attempt.status();
  EXPECT_EQ(attempt->checkpoint_dir, work_dir_ / "shared" / "00c0ffee");
}

TEST_F(AttemptDirTest, AFreshJobDiscardsOnlyWhatIsRecognisablyACellsCheckpoints) {
  JobSpec job = Job();
  job.fresh = true;
  job.checkpoint_dir = (work_dir_ / "data").string();
  fs::create_directories(job.checkpoint_dir);
  absl::StatusOr<AttemptDir> attempt = PrepareAttemptDir(work_dir_.string(), job);
  EXPECT_EQ(attempt.status().message(), "refusing to discard " + job.checkpoint_dir +
                                            ": not a checkpoint directory of cell 00c0ffee");
  EXPECT_TRUE(fs::exists(job.checkpoint_dir));
}

TEST_F(AttemptDirTest, ACellIdThatIsNotOnePathComponentIsRefusedBeforeAnythingIsTouched) {
  for (const std::string id : {"..", "../elsewhere", "a/b", "", "-rf"}) {
    SCOPED_TRACE(id);
    JobSpec job = Job();
    job.cell_id = id;
    absl::StatusOr<AttemptDir> attempt = PrepareAttemptDir(work_dir_.string(), job);
    EXPECT_EQ(attempt.status().message(),
              "cell id '" + id + "' cannot name a directory under " + work_dir_.string());
  }
  EXPECT_FALSE(fs::exists(work_dir_));
}

TEST_F(AttemptDirTest, AWorkDirThatCannotBeCreatedSaysWhere) {
  fs::create_directories(work_dir_.parent_path());
  std::ofstream(work_dir_.string()) << "a file, not a directory";
  absl::StatusOr<AttemptDir> attempt = PrepareAttemptDir(work_dir_.string(), Job());
  EXPECT_THAT(
      std::string(attempt.status().message()),
      StartsWith("cannot create " + (work_dir_ / "00c0ffee" / "attempt-3").string() + ": "));
}

}  // namespace
}  // namespace onset::worker
