// The cell state machine at the end of an attempt, one row per branch: the cell's state and
// counted failures, how the attempt ended and the policy, against what the store must write.
#include "coordinator/cells/cell_transitions.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <string>
#include <vector>

#include "base/trainer_contract.h"

namespace onset::coordinator {
namespace {

using std::chrono::milliseconds;

constexpr int64_t kNow = 1'000'000;
constexpr int64_t kBase = 30'000;  // RetryPolicy's default base backoff

// How an attempt ended.
AttemptEnd Reported(AttemptOutcome outcome, const std::string& reason = "") {
  AttemptEnd end;
  end.outcome = outcome;
  end.exit_code = 0;
  end.reason = reason;
  return end;
}
AttemptEnd Exited(int code, const std::string& stderr_tail = "", const std::string& reason = "") {
  AttemptEnd end;
  end.outcome = AttemptOutcome::kFailed;
  end.exit_code = code;
  end.stderr_tail = stderr_tail;
  end.reason = reason;
  return end;
}
AttemptEnd Killed(int signal, const std::string& stderr_tail = "") {
  AttemptEnd end;
  end.outcome = AttemptOutcome::kFailed;
  end.signal = signal;
  end.stderr_tail = stderr_tail;
  return end;
}

RetryPolicy Policy(int max_failures, int64_t base_ms = kBase, int64_t max_ms = 30 * 60'000) {
  RetryPolicy p;
  p.max_failures = max_failures;
  p.base_backoff = milliseconds(base_ms);
  p.max_backoff = milliseconds(max_ms);
  return p;
}

AttemptEndInput Ended(CellState state, int failures, AttemptEnd end,
                      RetryPolicy policy = RetryPolicy()) {
  AttemptEndInput in;
  in.cell_state = state;
  in.failures = failures;
  in.end = std::move(end);
  in.policy = policy;
  in.now_unix_ms = kNow;
  return in;
}
// The lease was lost: the store passes the requeue reason in an otherwise default end.
AttemptEndInput Lost(CellState state, int failures, const std::string& reason,
                     AttemptEnd end = AttemptEnd()) {
  end.reason = reason;
  AttemptEndInput in = Ended(state, failures, std::move(end));
  in.lost = true;
  return in;
}

struct Want {
  std::string outcome;
  FailureClass failure;
  CellState next;
  int failures;
  int64_t retry_at;
  std::string reason;
};

struct Case {
  const char* name;
  AttemptEndInput in;
  Want want;
};

using S = CellState;
using O = AttemptOutcome;
using F = FailureClass;

const std::vector<Case>& Cases() {
  static const std::vector<Case> cases = {
      // Reported ends that are no failure.
      {"Succeeded",
       Ended(S::kRunning, 0, Reported(O::kSucceeded)),
       {"succeeded", F::kNone, S::kSucceeded, 0, 0, ""}},
      {"SucceededKeepsEarlierFailures",
       Ended(S::kRunning, 2, Reported(O::kSucceeded, "done")),
       {"succeeded", F::kNone, S::kSucceeded, 2, 0, "done"}},
      {"SucceededWinsOverCancel",
       Ended(S::kCancelled, 1, Reported(O::kSucceeded)),
       {"succeeded", F::kNone, S::kSucceeded, 1, 0, ""}},
      {"DivergedIsAResultNotRetried",
       Ended(S::kRunning, 0, Reported(O::kDiverged, "loss nan")),
       {"diverged", F::kNone, S::kDiverged, 0, 0, "loss nan"}},
      {"DivergedUnderCancelStaysCancelled",
       Ended(S::kCancelled, 0, Reported(O::kDiverged)),
       {"cancelled", F::kNone, S::kCancelled, 0, 0, ""}},
      {"StoppedAndHandedBackQueuesAtOnce",
       Ended(S::kRunning, 1, Reported(O::kHandedBack, "worker stopping")),
       {"handed_back", F::kNone, S::kQueued, 1, 0, "worker stopping"}},
      {"HandedBackUnderCancelStaysCancelled",
       Ended(S::kCancelled, 0, Reported(O::kHandedBack)),
       {"cancelled", F::kNone, S::kCancelled, 0, 0, ""}},
      {"CancelledByTheWorker",
       Ended(S::kRunning, 0, Reported(O::kCancelled)),
       {"cancelled", F::kNone, S::kCancelled, 0, 0, ""}},
      {"CancelledAfterACancelRequest",
       Ended(S::kCancelled, 2, Reported(O::kCancelled)),
       {"cancelled", F::kNone, S::kCancelled, 2, 0, ""}},

      // Crashes: counted, backed off while the policy retries them.
      {"CrashBacksOff",
       Ended(S::kRunning, 0, Exited(1)),
       {"failed", F::kCrash, S::kBackoff, 1, kNow + kBase, "exit code 1"}},
      {"CrashKeepsTheWorkersReason",
       Ended(S::kRunning, 0, Exited(1, "boom", "trainer crashed")),
       {"failed", F::kCrash, S::kBackoff, 1, kNow + kBase, "trainer crashed"}},
      {"CrashBySignalNamesIt",
       Ended(S::kRunning, 0, Killed(SIGSEGV)),
       {"failed", F::kCrash, S::kBackoff, 1, kNow + kBase, "killed by SIGSEGV"}},
      {"BareSigkillIsACrash",
       Ended(S::kRunning, 0, Killed(SIGKILL)),
       {"failed", F::kCrash, S::kBackoff, 1, kNow + kBase, "killed by SIGKILL"}},
      {"SecondCrashWaitsTwiceAsLong",
       Ended(S::kRunning, 1, Exited(1)),
       {"failed", F::kCrash, S::kBackoff, 2, kNow + 2 * kBase, "exit code 1"}},
      {"CrashOutOfRetriesFails",
       Ended(S::kRunning, 2, Exited(1)),
       {"failed", F::kCrash, S::kFailed, 3, 0, "exit code 1"}},
      {"CrashPastTheLimitFails",
       Ended(S::kRunning, 5, Exited(1)),
       {"failed", F::kCrash, S::kFailed, 6, 0, "exit code 1"}},
      {"OneFailureAllowedFailsAtOnce",
       Ended(S::kRunning, 0, Exited(1), Policy(1)),
       {"failed", F::kCrash, S::kFailed, 1, 0, "exit code 1"}},
      {"BackoffDoubles",
       Ended(S::kRunning, 2, Exited(1), Policy(10, 1000, 5000)),
       {"failed", F::kCrash, S::kBackoff, 3, kNow + 4000, "exit code 1"}},
      {"BackoffStopsAtTheCap",
       Ended(S::kRunning, 5, Exited(1), Policy(10, 1000, 5000)),
       {"failed", F::kCrash, S::kBackoff, 6, kNow + 5000, "exit code 1"}},

      // Failures the same config would repeat: failed at once, not counted.
      {"OutOfMemoryFailsAtOnce",
       Ended(S::kRunning, 1, Exited(1, "CUDA out of memory. Tried")),
       {"failed", F::kOom, S::kFailed, 1, 0, "out of memory: exit code 1"}},
      {"OomKillerWithWordOnStderr",
       Ended(S::kRunning, 0, Killed(SIGKILL, "mmap: Cannot allocate memory")),
       {"failed", F::kOom, S::kFailed, 0, 0, "out of memory: killed by SIGKILL"}},
      {"ConfigRefusedFailsAtOnce",
       Ended(S::kRunning, 0, Exited(trainer::kExitUsage)),
       {"failed", F::kConfig, S::kFailed, 0, 0,
        "config or data refused by the trainer: exit code 2"}},

      // Failures under a cancel: the cell stays cancelled, the failure is recorded (with the
      // backoff time it would have had).
      {"CrashUnderCancelStaysCancelled",
       Ended(S::kCancelled, 0, Exited(1)),
       {"failed", F::kCrash, S::kCancelled, 1, kNow + kBase, "exit code 1"}},
      {"CrashOutOfRetriesUnderCancel",
       Ended(S::kCancelled, 2, Exited(1)),
       {"failed", F::kCrash, S::kCancelled, 3, 0, "exit code 1"}},
      {"OomUnderCancelStaysCancelled",
       Ended(S::kCancelled, 0, Exited(1, "std::bad_alloc")),
       {"failed", F::kOom, S::kCancelled, 0, 0, "out of memory: exit code 1"}},

      // Lost leases: no report came; retried like a crash.
      {"LostLeaseBacksOff",
       Lost(S::kRunning, 0, "lease expired"),
       {"lost", F::kLost, S::kBackoff, 1, kNow + kBase, "lease expired"}},
      {"LostLeaseOutOfRetriesFails",
       Lost(S::kRunning, 2, "worker gone"),
       {"lost", F::kLost, S::kFailed, 3, 0, "worker gone"}},
      {"LostLeaseIgnoresAnyReport",
       Lost(S::kRunning, 0, "lease expired", Exited(trainer::kExitUsage, "out of memory")),
       {"lost", F::kLost, S::kBackoff, 1, kNow + kBase, "lease expired"}},
      {"LostUnderCancelStaysCancelled",
       Lost(S::kCancelled, 0, "lease expired"),
       {"lost", F::kLost, S::kCancelled, 1, kNow + kBase, "lease expired"}},
      {"LostUnderCancelKeepsLostOverAReportedEnd",
       Lost(S::kCancelled, 0, "lease expired", Reported(O::kHandedBack)),
       {"lost", F::kLost, S::kCancelled, 1, kNow + kBase, "lease expired"}},
  };
  return cases;
}

class CellTransitionTest : public ::testing::TestWithParam<Case> {};

TEST_P(CellTransitionTest, WritesTheExpectedEnd) {
  const Case& c = GetParam();
  const CellTransition t = TransitionAtAttemptEnd(c.in);
  EXPECT_EQ(t.outcome, c.want.outcome);
  EXPECT_EQ(FailureClassName(t.failure), std::string(FailureClassName(c.want.failure)));
  EXPECT_EQ(CellStateName(t.next), std::string(CellStateName(c.want.next)));
  EXPECT_EQ(t.failures, c.want.failures);
  EXPECT_EQ(t.retry_at_unix_ms, c.want.retry_at);
  EXPECT_EQ(t.reason, c.want.reason);
}

INSTANTIATE_TEST_SUITE_P(Table, CellTransitionTest, ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           return std::string(info.param.name);
                         });

// The time comes in: nothing in the transition reads a clock.
TEST(CellTransitionTimeTest, BackoffCountsFromTheGivenTime) {
  AttemptEndInput in = Ended(CellState::kRunning, 0, Exited(1));
  in.now_unix_ms = 5;
  EXPECT_EQ(TransitionAtAttemptEnd(in).retry_at_unix_ms, 5 + kBase);
}

}  // namespace
}  // namespace onset::coordinator
