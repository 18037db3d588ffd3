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

  WorkerRoots Roots() const { return {work_dir_.string(), root_.string()}; }

  testutil::TempDir tmp_;
  fs::path work_dir_ = fs::path(tmp_.path()) / "work";  // made by the code under test
  fs::path root_ = fs::path(tmp_.path()) / "shared";    // the worker's --checkpoint-root
};

TEST_F(AttemptDirTest, CreatesTheAttemptWithItsConfigAndItsOwnCheckpointDirectory) {
  absl::StatusOr<AttemptDir> attempt = PrepareAttemptDir(Roots(), Job());
  ASSERT_TRUE(attempt.ok()) << attempt.status();
  EXPECT_TRUE(attempt->dir.is_absolute());
  EXPECT_EQ(attempt->dir, work_dir_ / "00c0ffee" / "attempt-3");
  EXPECT_EQ(attempt->config_path, attempt->dir / "config.json");
  EXPECT_EQ(attempt->lock_path, attempt->dir / "trainer.lock");
  EXPECT_EQ(Read(attempt->config_path), "{\"model\":{}}");
  EXPECT_EQ(attempt->checkpoint_dir, attempt->dir / "checkpoints");
  EXPECT_TRUE(fs::is_directory(attempt->checkpoint_dir));
  EXPECT_TRUE(attempt->resume_files.empty());
  EXPECT_FALSE(attempt->cleared_checkpoint_dir);
}

// Another attempt's checkpoints are never touched; the attempt resumes only what is named.
TEST_F(AttemptDirTest, ResumesOnlyTheNamedCheckpointsAndTouchesNoOtherAttempts) {
  const fs::path earlier = work_dir_ / "00c0ffee" / "attempt-2" / "checkpoints";
  fs::create_directories(earlier);
  std::ofstream(earlier / "ckpt-000000001000.pt") << "old";
  std::ofstream(earlier / "ckpt-000000002000.pt") << "newer, never recorded";
  JobSpec job = Job();
  job.resume_from = {{2, 1000, "", true}, {1, 500, "", false}};
  absl::StatusOr<AttemptDir> attempt = PrepareAttemptDir(Roots(), job);
  ASSERT_TRUE(attempt.ok()) << attempt.status();
  EXPECT_THAT(attempt->resume_files, ::testing::ElementsAre(earlier / "ckpt-000000001000.pt",
                                                            work_dir_ / "00c0ffee" / "checkpoints" /
                                                                "ckpt-000000000500.pt"));
  EXPECT_EQ(Read(earlier / "ckpt-000000001000.pt"), "old");
  EXPECT_TRUE(fs::exists(earlier / "ckpt-000000002000.pt"));
}

TEST_F(AttemptDirTest, FilesLeftInTheAttemptsOwnDirectoryAreClearedAsAnotherRuns) {
  const fs::path own = work_dir_ / "00c0ffee" / "attempt-3" / "checkpoints";
  fs::create_directories(own);
  std::ofstream(own / "ckpt-000000001000.pt") << "of another database's attempt 3";
  absl::StatusOr<AttemptDir> attempt = PrepareAttemptDir(Roots(), Job());
  ASSERT_TRUE(attempt.ok()) << attempt.status();
  EXPECT_TRUE(attempt->cleared_checkpoint_dir);
  EXPECT_TRUE(fs::is_empty(own));
}

TEST_F(AttemptDirTest, UsesTheCheckpointDirectoryTheCoordinatorNames) {
  JobSpec job = Job();
  job.checkpoint_dir = (work_dir_ / "shared" / "00c0ffee" / "attempt-3").string();
  absl::StatusOr<AttemptDir> attempt = PrepareAttemptDir(Roots(), job);
  ASSERT_TRUE(attempt.ok()) << attempt.status();
  EXPECT_EQ(attempt->checkpoint_dir, work_dir_ / "shared" / "00c0ffee" / "attempt-3");
}

TEST_F(AttemptDirTest, TheCheckpointRootHoldsTheCoordinatorsCheckpointDirectories) {
  JobSpec job = Job();
  job.checkpoint_dir = (root_ / "study" / "00c0ffee" / "attempt-3").string();
  job.trunk_checkpoint =
      (root_ / "study" / "trunk" / "attempt-1" / "ckpt-000000001000.pt").string();
  job.resume_from = {
      {2, 800, (root_ / "study" / "00c0ffee" / "attempt-2" / "ckpt-000000000800.pt").string(),
       true}};
  absl::StatusOr<AttemptDir> attempt = PrepareAttemptDir(Roots(), job);
  ASSERT_TRUE(attempt.ok()) << attempt.status();
  EXPECT_EQ(attempt->checkpoint_dir, root_ / "study" / "00c0ffee" / "attempt-3");
  EXPECT_THAT(attempt->resume_files, ::testing::ElementsAre(root_ / "study" / "00c0ffee" /
                                                            "attempt-2" / "ckpt-000000000800.pt"));
}

// A coordinator (or anything that answers as one) naming a directory elsewhere gets nothing
// made, written or deleted there: not even with a last component equal to the cell id, nor
// through "..", nor through a link inside a root.
TEST_F(AttemptDirTest, APathOutsideTheWorkersRootsIsRefusedBeforeAnythingIsTouched) {
  const fs::path victim = fs::path(tmp_.path()) / "elsewhere" / "00c0ffee";
  fs::create_directories(victim / "sub");
  std::ofstream(victim / "precious.txt") << "keep me";
  fs::create_directories(root_);
  fs::create_directory_symlink(victim.parent_path(), root_ / "link");
  for (const fs::path& dir : {victim, root_ / ".." / "elsewhere" / "00c0ffee",
                              root_ / "link" / "00c0ffee", fs::path("/tmp/00c0ffee")}) {
    SCOPED_TRACE(dir.string());
    JobSpec job = Job();
    job.checkpoint_dir = dir.string();
    absl::StatusOr<AttemptDir> attempt = PrepareAttemptDir(Roots(), job);
    EXPECT_EQ(attempt.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(attempt.status().message()),
                StartsWith("the job's checkpoint directory " + dir.string() +
                           " lies outside this worker's --work-dir " + work_dir_.string() +
                           " and --checkpoint-root " + root_.string()));
  }
  JobSpec branch = Job();
  branch.trunk_checkpoint = (victim / "precious.txt").string();
  EXPECT_EQ(PrepareAttemptDir(Roots(), branch).status().code(), absl::StatusCode::kInvalidArgument);
  JobSpec resume = Job();
  resume.resume_from = {{1, 10, (victim / "precious.txt").string(), true}};
  EXPECT_EQ(PrepareAttemptDir(Roots(), resume).status().code(), absl::StatusCode::kInvalidArgument);
  // Without --checkpoint-root only the work directory counts, and the error says what to set.
  JobSpec shared = Job();
  shared.checkpoint_dir = (root_ / "study" / "00c0ffee").string();
  absl::StatusOr<AttemptDir> attempt = PrepareAttemptDir({work_dir_.string(), ""}, shared);
  EXPECT_THAT(std::string(attempt.status().message()), testing::HasSubstr("--checkpoint-root"));
  EXPECT_TRUE(fs::exists(victim / "precious.txt"));
  EXPECT_TRUE(fs::exists(victim / "sub"));
  EXPECT_FALSE(fs::exists(work_dir_));
}

TEST_F(AttemptDirTest, OnlyWhatIsRecognisablyTheAttemptsDirectoryIsWritten) {
  JobSpec job = Job();
  job.checkpoint_dir = (work_dir_ / "data").string();
  fs::create_directories(job.checkpoint_dir);
  std::ofstream(fs::path(job.checkpoint_dir) / "keep.txt") << "keep";
  absl::StatusOr<AttemptDir> attempt = PrepareAttemptDir(Roots(), job);
  EXPECT_EQ(attempt.status().message(), "refusing to write into " + job.checkpoint_dir +
                                            ": not a checkpoint directory of attempt 3");
  EXPECT_TRUE(fs::exists(fs::path(job.checkpoint_dir) / "keep.txt"));
}

TEST_F(AttemptDirTest, ACellIdThatIsNotOnePathComponentIsRefusedBeforeAnythingIsTouched) {
  for (const std::string id : {"..", "../elsewhere", "a/b", "", "-rf"}) {
    SCOPED_TRACE(id);
    JobSpec job = Job();
    job.cell_id = id;
    absl::StatusOr<AttemptDir> attempt = PrepareAttemptDir(Roots(), job);
    EXPECT_EQ(attempt.status().message(),
              "cell id '" + id + "' cannot name a directory under " + work_dir_.string());
  }
  EXPECT_FALSE(fs::exists(work_dir_));
}

TEST_F(AttemptDirTest, AWorkDirThatCannotBeCreatedSaysWhere) {
  fs::create_directories(work_dir_.parent_path());
  std::ofstream(work_dir_.string()) << "a file, not a directory";
  absl::StatusOr<AttemptDir> attempt = PrepareAttemptDir(Roots(), Job());
  EXPECT_THAT(
      std::string(attempt.status().message()),
      StartsWith("cannot create " + (work_dir_ / "00c0ffee" / "attempt-3").string() + ": "));
}

}  // namespace
}  // namespace onset::worker
