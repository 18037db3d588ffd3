#include "worker/trainer_exit.h"

#include <signal.h>

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"

namespace onset::worker {
namespace {

ExitStatus Exited(int code) { return ExitStatus{code, 0}; }
ExitStatus Killed(int signal) { return ExitStatus{0, signal}; }

// The exit codes that mean something of their own; every other one is a failure.
struct Row {
  int exit_code;
  JobOutcome outcome;
  std::string reason;
};
const Row kTable[] = {
    {trainer::kExitOk, JobOutcome::kSucceeded, ""},
    {trainer::kExitDiverged, JobOutcome::kDiverged, "diverged: the training loss was not finite"},
    {trainer::kExitStopped, JobOutcome::kHandedBack, "trainer stopped by a signal"},
};

TEST(TrainerExitTest, EveryExitCodeOfATrainerThatRanOnItsOwn) {
  for (int code = 0; code <= 255; ++code) {
    SCOPED_TRACE(absl::StrCat("exit code ", code));
    Row expected{code, JobOutcome::kFailed, absl::StrCat("exit code ", code)};
    for (const Row& row : kTable) {
      if (row.exit_code == code) expected = row;
    }
    const TrainerExit exit = ClassifyTrainerExit(Exited(code));
    EXPECT_EQ(exit.outcome, expected.outcome);
    EXPECT_EQ(exit.reason, expected.reason);
  }
}

TEST(TrainerExitTest, TheCodesTheWorkerNamesAreOnsetTrains) {
  EXPECT_EQ(trainer::kExitOk, 0);
  EXPECT_EQ(trainer::kExitRuntimeError, 1);
  EXPECT_EQ(trainer::kExitUsage, 2);
  EXPECT_EQ(trainer::kExitDiverged, 3);
  EXPECT_EQ(trainer::kExitStopped, 4);
}

TEST(TrainerExitTest, DivergedIsAResultOfItsOwnNotAFailure) {
  EXPECT_EQ(ClassifyTrainerExit(Exited(trainer::kExitDiverged)).outcome, JobOutcome::kDiverged);
}

TEST(TrainerExitTest, EverySignalThatKilledATrainerIsAFailure) {
  for (int signal = 1; signal <= SIGRTMAX; ++signal) {
    SCOPED_TRACE(absl::StrCat("signal ", signal));
    const TrainerExit exit = ClassifyTrainerExit(Killed(signal));
    EXPECT_EQ(exit.outcome, JobOutcome::kFailed);
    EXPECT_EQ(exit.reason, Killed(signal).ToString());
  }
  EXPECT_EQ(ClassifyTrainerExit(Killed(SIGKILL)).reason, "killed by signal 9 (SIGKILL)");
  // A trainer that dies of the signal itself, without checkpointing, failed.
  EXPECT_EQ(ClassifyTrainerExit(Killed(SIGTERM)).outcome, JobOutcome::kFailed);
}

TEST(TrainerExitTest, AStopByTheWorkerDecidesWhateverTheExit) {
  std::vector<ExitStatus> statuses;
  for (int code = 0; code <= 255; ++code) statuses.push_back(Exited(code));
  for (int signal = 1; signal <= SIGRTMAX; ++signal) statuses.push_back(Killed(signal));
  for (const ExitStatus& status : statuses) {
    SCOPED_TRACE(status.ToString());
    const TrainerExit stopped = ClassifyTrainerExit(status, TrainerStop::kWorkerStopped);
    EXPECT_EQ(stopped.outcome, JobOutcome::kHandedBack);
    EXPECT_EQ(stopped.reason, "worker stopped");
    const TrainerExit cancelled = ClassifyTrainerExit(status, TrainerStop::kCellCancelled);
    EXPECT_EQ(cancelled.outcome, JobOutcome::kCancelled);
    EXPECT_EQ(cancelled.reason, "cancelled");
  }
}

}  // namespace
}  // namespace onset::worker
