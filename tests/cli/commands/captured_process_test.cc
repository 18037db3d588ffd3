// RunCaptured: the command's environment as asked, its exit status, and output kept within the
// bound however much it prints.
#include "cli/commands/captured_process.h"

#include <gtest/gtest.h>

#include <string>

namespace onset::cli {
namespace {

TEST(CapturedProcessTest, EnvironmentSetAndUnsetAndBoundedOutput) {
  CaptureOptions options;
  options.argv = {"sh", "-c",
                  "echo \"[$ONSET_CAPTURE_TEST_SET][${HOME-unset}]\"; "
                  "head -c 100000 /dev/zero | tr '\\0' a >&2; exit 3"};
  options.set = {{"ONSET_CAPTURE_TEST_SET", "a b"}};
  options.unset = {"HOME"};
  options.max_output_bytes = 1000;
  absl::StatusOr<CapturedRun> run = RunCaptured(options);
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(run->out, "[a b][unset]\n");
  EXPECT_EQ(run->err, std::string(1000, 'a'));
  EXPECT_EQ(run->status.exit_code, 3);
  EXPECT_EQ(run->status.ToString(), "exit code 3");
  EXPECT_FALSE(run->Succeeded());
}

TEST(CapturedProcessTest, ASignalEndsIt) {
  CaptureOptions options;
  options.argv = {"sh", "-c", "kill -9 $$"};
  absl::StatusOr<CapturedRun> run = RunCaptured(options);
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(run->status.signal, 9);
  EXPECT_EQ(run->status.ToString(), "killed by signal 9 (SIGKILL)");
}

TEST(CapturedProcessTest, AProgramThatIsNotThere) {
  CaptureOptions options;
  options.argv = {"/nonexistent/onset-no-such-program"};
  absl::StatusOr<CapturedRun> run = RunCaptured(options);
  EXPECT_EQ(run.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(run.status().message(),
            "cannot run /nonexistent/onset-no-such-program: No such file or directory");
}

}  // namespace
}  // namespace onset::cli
