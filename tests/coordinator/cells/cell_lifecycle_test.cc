// The cell lifecycle (cell_lifecycle.h): the end of an attempt, one row per branch of the failure
// policy; then each rule alone (fencing, intents, expiry and its fence, unconfirmed claims, late
// successes, lineages, trunks).
#include "coordinator/cells/cell_lifecycle.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <string>
#include <vector>

#include "base/trainer_contract.h"

namespace onset::coordinator::life {
namespace {

using std::chrono::milliseconds;

constexpr int64_t kNow = 1'000'000;
constexpr int64_t kBase = 30'000;  // RetryPolicy's default base backoff
constexpr int64_t kMargin = 5'000;

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

Context At(int64_t now, RetryPolicy policy = RetryPolicy()) {
  Context c;
  c.policy = policy;
  c.now_unix_ms = now;
  c.stop_margin_ms = kMargin;
  return c;
}

// A cell whose attempt 1 runs (its worker has called), with `failures` counted and `intent`.
CellLife Running(int failures = 0, Intent intent = Intent::kNone) {
  CellLife cell;
  cell.state = CellState::kRunning;
  cell.failures = failures;
  cell.intent = intent;
  cell.attempt = 1;
  cell.attempt_open = true;
  cell.attempt_lineage = 1;
  cell.contacted = true;
  return cell;
}

Step ReportOf(const CellLife& cell, AttemptEnd end, RetryPolicy policy = RetryPolicy()) {
  Report r;
  r.attempt = cell.attempt;
  r.end = std::move(end);
  return Apply(cell, r, At(kNow, policy));
}

// ----- the end of an attempt, as reported ------------------------------------------------------

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
  CellLife cell;
  AttemptEnd end;
  RetryPolicy policy;
  Want want;
};

using S = CellState;
using O = AttemptOutcome;
using F = FailureClass;
using I = Intent;

const std::vector<Case>& Cases() {
  static const std::vector<Case> cases = {
      // Reported ends that are no failure.
      {"Succeeded",
       Running(),
       Reported(O::kSucceeded),
       {},
       {"succeeded", F::kNone, S::kSucceeded, 0, 0, ""}},
      {"SucceededKeepsEarlierFailures",
       Running(2),
       Reported(O::kSucceeded, "done"),
       {},
       {"succeeded", F::kNone, S::kSucceeded, 2, 0, "done"}},
      {"SucceededWinsOverCancel",
       Running(1, I::kCancel),
       Reported(O::kSucceeded),
       {},
       {"succeeded", F::kNone, S::kSucceeded, 1, 0, ""}},
      {"DivergedIsAResultNotRetried",
       Running(),
       Reported(O::kDiverged, "loss nan"),
       {},
       {"diverged", F::kNone, S::kDiverged, 0, 0, "loss nan"}},
      {"DivergedUnderCancelStaysCancelled",
       Running(0, I::kCancel),
       Reported(O::kDiverged),
       {},
       {"cancelled", F::kNone, S::kCancelled, 0, 0, ""}},
      {"StoppedAndHandedBackQueuesAtOnce",
       Running(1),
       Reported(O::kHandedBack, "worker stopping"),
       {},
       {"handed_back", F::kNone, S::kQueued, 1, 0, "worker stopping"}},
      {"HandedBackUnderCancelStaysCancelled",
       Running(0, I::kCancel),
       Reported(O::kHandedBack),
       {},
       {"cancelled", F::kNone, S::kCancelled, 0, 0, ""}},
      {"CancelledByTheWorker",
       Running(),
       Reported(O::kCancelled),
       {},
       {"cancelled", F::kNone, S::kCancelled, 0, 0, ""}},
      {"CancelledAfterACancelRequest",
       Running(2, I::kCancel),
       Reported(O::kCancelled),
       {},
       {"cancelled", F::kNone, S::kCancelled, 2, 0, ""}},

      // Crashes: counted, backed off while the policy retries them.
      {"CrashBacksOff",
       Running(),
       Exited(1),
       {},
       {"failed", F::kCrash, S::kBackoff, 1, kNow + kBase, "exit code 1"}},
      {"CrashKeepsTheWorkersReason",
       Running(),
       Exited(1, "boom", "trainer crashed"),
       {},
       {"failed", F::kCrash, S::kBackoff, 1, kNow + kBase, "trainer crashed"}},
      {"CrashBySignalNamesIt",
       Running(),
       Killed(SIGSEGV),
       {},
       {"failed", F::kCrash, S::kBackoff, 1, kNow + kBase, "killed by SIGSEGV"}},
      {"BareSigkillIsACrash",
       Running(),
       Killed(SIGKILL),
       {},
       {"failed", F::kCrash, S::kBackoff, 1, kNow + kBase, "killed by SIGKILL"}},
      {"SecondCrashWaitsTwiceAsLong",
       Running(1),
       Exited(1),
       {},
       {"failed", F::kCrash, S::kBackoff, 2, kNow + 2 * kBase, "exit code 1"}},
      {"CrashOutOfRetriesFails",
       Running(2),
       Exited(1),
       {},
       {"failed", F::kCrash, S::kFailed, 3, 0, "exit code 1"}},
      {"OneFailureAllowedFailsAtOnce",
       Running(),
       Exited(1),
       Policy(1),
       {"failed", F::kCrash, S::kFailed, 1, 0, "exit code 1"}},
      {"BackoffDoubles",
       Running(2),
       Exited(1),
       Policy(10, 1000, 5000),
       {"failed", F::kCrash, S::kBackoff, 3, kNow + 4000, "exit code 1"}},
      {"BackoffStopsAtTheCap",
       Running(5),
       Exited(1),
       Policy(10, 1000, 5000),
       {"failed", F::kCrash, S::kBackoff, 6, kNow + 5000, "exit code 1"}},

      // Failures the same config would repeat: failed at once, not counted.
      {"OutOfMemoryFailsAtOnce",
       Running(1),
       Exited(1, "CUDA out of memory. Tried"),
       {},
       {"failed", F::kOom, S::kFailed, 1, 0, "out of memory: exit code 1"}},
      {"OomKillerWithWordOnStderr",
       Running(),
       Killed(SIGKILL, "mmap: Cannot allocate memory"),
       {},
       {"failed", F::kOom, S::kFailed, 0, 0, "out of memory: killed by SIGKILL"}},
      {"ConfigRefusedFailsAtOnce",
       Running(),
       Exited(trainer::kExitUsage),
       {},
       {"failed", F::kConfig, S::kFailed, 0, 0,
        "config or data refused by the trainer: exit code 2"}},

      // Failures under a cancel: the cell ends cancelled, the failure is recorded.
      {"CrashUnderCancelStaysCancelled",
       Running(0, I::kCancel),
       Exited(1),
       {},
       {"failed", F::kCrash, S::kCancelled, 1, 0, "exit code 1"}},
      {"CrashOutOfRetriesUnderCancel",
       Running(2, I::kCancel),
       Exited(1),
       {},
       {"failed", F::kCrash, S::kCancelled, 3, 0, "exit code 1"}},
      {"OomUnderCancelStaysCancelled",
       Running(0, I::kCancel),
       Exited(1, "std::bad_alloc"),
       {},
       {"failed", F::kOom, S::kCancelled, 0, 0, "out of memory: exit code 1"}},

      // Under a rerun the cell is queued again, whatever the attempt did, its failures reset.
      {"StoppedForARerunQueues",
       Running(2, I::kRerun),
       Reported(O::kCancelled),
       {},
       {"cancelled", F::kNone, S::kQueued, 0, 0, ""}},
      {"CrashUnderRerunQueues",
       Running(2, I::kRerun),
       Exited(1),
       {},
       {"failed", F::kCrash, S::kQueued, 0, 0, "exit code 1"}},
      {"SuccessUnderRerunQueues",
       Running(0, I::kRerun),
       Reported(O::kSucceeded),
       {},
       {"succeeded", F::kNone, S::kQueued, 0, 0, ""}},
  };
  return cases;
}

class AttemptEndTest : public ::testing::TestWithParam<Case> {};

TEST_P(AttemptEndTest, WritesTheExpectedEnd) {
  const Case& c = GetParam();
  const Step step = ReportOf(c.cell, c.end, c.policy);
  ASSERT_EQ(step.verdict, Verdict::kApplied);
  ASSERT_TRUE(step.close.has_value());
  EXPECT_EQ(step.close->outcome, c.want.outcome);
  EXPECT_EQ(FailureClassName(step.close->failure), std::string(FailureClassName(c.want.failure)));
  EXPECT_EQ(CellStateName(step.next.state), std::string(CellStateName(c.want.next)));
  EXPECT_EQ(step.next.failures, c.want.failures);
  EXPECT_EQ(step.next.retry_at_unix_ms, c.want.retry_at);
  EXPECT_EQ(step.close->reason, c.want.reason);
  EXPECT_FALSE(step.next.attempt_open);
  EXPECT_EQ(step.next.intent, Intent::kNone);
  EXPECT_EQ(CheckInvariants(step.next, c.policy), "");
}

INSTANTIATE_TEST_SUITE_P(Table, AttemptEndTest, ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           return std::string(info.param.name);
                         });

// ----- claims ----------------------------------------------------------------------------------

TEST(ClaimTest, OpensTheNextAttemptOfAQueuedCell) {
  CellLife cell;
  const Step step = Apply(cell, Claim{}, At(kNow));
  ASSERT_EQ(step.verdict, Verdict::kApplied);
  EXPECT_EQ(step.next.state, CellState::kRunning);
  EXPECT_EQ(step.next.attempt, 1);
  EXPECT_TRUE(step.next.attempt_open);
  EXPECT_FALSE(step.next.contacted);
  EXPECT_EQ(step.next.attempt_lineage, 1);
}

TEST(ClaimTest, ARunningCellIsNeverClaimedAgain) {
  for (Intent intent : {Intent::kNone, Intent::kCancel, Intent::kRerun, Intent::kRerunFresh,
                        Intent::kCancelFresh}) {
    const Step step = Apply(Running(0, intent), Claim{}, At(kNow));
    EXPECT_EQ(step.verdict, Verdict::kNotClaimable) << IntentName(intent);
    EXPECT_EQ(step.next.attempt, 1);
  }
}

TEST(ClaimTest, BackoffWaitsForItsTime) {
  CellLife cell;
  cell.state = CellState::kBackoff;
  cell.retry_at_unix_ms = kNow + 1;
  EXPECT_EQ(Apply(cell, Claim{}, At(kNow)).verdict, Verdict::kNotClaimable);
  EXPECT_EQ(Apply(cell, Claim{}, At(kNow + 1)).verdict, Verdict::kApplied);
}

TEST(ClaimTest, EndedCellsAreNotClaimed) {
  for (CellState s :
       {CellState::kSucceeded, CellState::kFailed, CellState::kDiverged, CellState::kCancelled}) {
    CellLife cell;
    cell.state = s;
    EXPECT_EQ(Apply(cell, Claim{}, At(kNow)).verdict, Verdict::kNotClaimable) << CellStateName(s);
  }
}

// ----- fencing ---------------------------------------------------------------------------------

TEST(FencingTest, AnEarlierAttemptChangesNothing) {
  CellLife cell = Running();
  cell.attempt = 3;
  const Step contact = Apply(cell, Contact{2}, At(kNow));
  EXPECT_EQ(contact.verdict, Verdict::kFenced);
  EXPECT_NE(contact.message.find("not the cell's current attempt"), std::string::npos);
  Report r;
  r.attempt = 2;
  r.end = Reported(AttemptOutcome::kSucceeded);
  const Step report = Apply(cell, r, At(kNow));
  EXPECT_EQ(report.verdict, Verdict::kFenced);
  EXPECT_EQ(report.next.state, CellState::kRunning);
  EXPECT_FALSE(report.close.has_value());
  EXPECT_EQ(Apply(cell, Expire{2, "x"}, At(kNow)).verdict, Verdict::kUnchanged);
  EXPECT_EQ(Apply(cell, HandBack{2, "x"}, At(kNow)).verdict, Verdict::kUnchanged);
}

TEST(FencingTest, AnEndedAttemptIsToldToStop) {
  CellLife cell = ReportOf(Running(), Exited(1)).next;  // backoff
  const Step contact = Apply(cell, Contact{1}, At(kNow));
  EXPECT_EQ(contact.verdict, Verdict::kFenced);
  EXPECT_NE(contact.message.find("has ended (failed)"), std::string::npos);
  // Not even a success changes a failed attempt's end.
  Report r;
  r.attempt = 1;
  r.end = Reported(AttemptOutcome::kSucceeded);
  EXPECT_EQ(Apply(cell, r, At(kNow)).verdict, Verdict::kFenced);
}

TEST(FencingTest, AContactMarksTheAttemptConfirmed) {
  CellLife cell = Apply(CellLife(), Claim{}, At(kNow)).next;
  const Step step = Apply(cell, Contact{1}, At(kNow));
  EXPECT_EQ(step.verdict, Verdict::kApplied);
  EXPECT_TRUE(step.next.contacted);
  EXPECT_FALSE(step.stop);
}

// ----- intents ---------------------------------------------------------------------------------

TEST(IntentTest, CancelOfARunningCellWaitsForItsAttempt) {
  const Step cancel = Apply(Running(), Cancel{}, At(kNow));
  ASSERT_EQ(cancel.verdict, Verdict::kApplied);
  EXPECT_EQ(cancel.next.state, CellState::kRunning);
  EXPECT_EQ(cancel.next.intent, Intent::kCancel);
  EXPECT_FALSE(cancel.ended_for_good);
  // The attempt hears it at its next call.
  const Step contact = Apply(cancel.next, Contact{1}, At(kNow));
  EXPECT_TRUE(contact.stop);
  // A second cancel changes nothing.
  EXPECT_EQ(Apply(cancel.next, Cancel{}, At(kNow)).verdict, Verdict::kUnchanged);
  const Step end = ReportOf(cancel.next, Reported(AttemptOutcome::kCancelled));
  EXPECT_EQ(end.next.state, CellState::kCancelled);
  EXPECT_TRUE(end.ended_for_good);
}

TEST(IntentTest, CancelThenRerunOfARunningCellRunsItOnceMore) {
  CellLife cell = Apply(Running(), Cancel{}, At(kNow)).next;
  EXPECT_EQ(SelectedAs(cell.state, cell.intent), CellState::kCancelled);
  const Step rerun = Apply(cell, Rerun{}, At(kNow));
  ASSERT_EQ(rerun.verdict, Verdict::kApplied);
  EXPECT_EQ(rerun.next.intent, Intent::kRerun);
  EXPECT_EQ(rerun.next.state, CellState::kRunning);
  EXPECT_EQ(Apply(rerun.next, Claim{}, At(kNow)).verdict, Verdict::kNotClaimable);
  const Step end = ReportOf(rerun.next, Reported(AttemptOutcome::kCancelled));
  EXPECT_EQ(end.next.state, CellState::kQueued);
  EXPECT_FALSE(end.new_lineage);
  EXPECT_EQ(Apply(end.next, Claim{}, At(kNow)).next.attempt, 2);
}

TEST(IntentTest, AFreshRerunStaysFreshUntilCarriedOut) {
  CellLife cell = Apply(Running(), Rerun{true}, At(kNow)).next;
  cell = Apply(cell, Rerun{false}, At(kNow)).next;
  EXPECT_EQ(cell.intent, Intent::kRerunFresh);
  EXPECT_EQ(cell.lineage, 1);  // not while the attempt may still report points
  const Step end = ReportOf(cell, Reported(AttemptOutcome::kCancelled));
  EXPECT_TRUE(end.new_lineage);
  EXPECT_EQ(end.next.lineage, 2);
  EXPECT_EQ(end.next.state, CellState::kQueued);
}

// "rerun --fresh, then cancel" of a running cell: cancelled, and the old run is gone with its
// points even when the attempt went on to succeed; a rerun after it starts from scratch.
TEST(IntentTest, ACancelAfterAFreshRerunKeepsTheFreshRerun) {
  CellLife cell = Apply(Running(), Rerun{true}, At(kNow)).next;
  cell = Apply(cell, Cancel{}, At(kNow)).next;
  EXPECT_EQ(cell.intent, Intent::kCancelFresh);
  EXPECT_EQ(SelectedAs(cell.state, cell.intent), CellState::kCancelled);
  const Step end = ReportOf(cell, Reported(AttemptOutcome::kSucceeded));
  EXPECT_EQ(end.next.state, CellState::kCancelled);
  EXPECT_EQ(end.close->outcome, "cancelled");
  EXPECT_TRUE(end.new_lineage);
  EXPECT_EQ(end.next.lineage, 2);
  // Rerun after the cancel: still fresh.
  cell = Apply(Apply(Running(), Rerun{true}, At(kNow)).next, Cancel{}, At(kNow)).next;
  cell = Apply(cell, Rerun{false}, At(kNow)).next;
  EXPECT_EQ(cell.intent, Intent::kRerunFresh);
}

TEST(IntentTest, AFreshRerunOfAnEndedCellBeginsANewLineageAtOnce) {
  CellLife cell = ReportOf(Running(1), Reported(AttemptOutcome::kSucceeded)).next;
  const Step step = Apply(cell, Rerun{true}, At(kNow));
  EXPECT_TRUE(step.new_lineage);
  EXPECT_EQ(step.next.lineage, 2);
  EXPECT_EQ(step.next.state, CellState::kQueued);
  EXPECT_EQ(step.next.failures, 0);
  // The old attempt's late reports are fenced.
  Report r;
  r.attempt = 1;
  r.end = Reported(AttemptOutcome::kSucceeded);
  EXPECT_EQ(Apply(step.next, r, At(kNow)).verdict, Verdict::kFenced);
}

TEST(IntentTest, CancelOfAWaitingCellIsAtOnce) {
  CellLife cell;
  cell.state = CellState::kBackoff;
  cell.retry_at_unix_ms = kNow + 10;
  const Step step = Apply(cell, Cancel{}, At(kNow));
  EXPECT_EQ(step.next.state, CellState::kCancelled);
  EXPECT_EQ(step.next.retry_at_unix_ms, 0);
  EXPECT_TRUE(step.ended_for_good);
}

// ----- leases ----------------------------------------------------------------------------------

TEST(ExpireTest, ALostLeaseIsACountedFailureFencedForTheStopMargin) {
  const Step step = Apply(Running(), Expire{1, "lease expired"}, At(kNow));
  ASSERT_EQ(step.verdict, Verdict::kApplied);
  EXPECT_EQ(step.close->outcome, "lost");
  EXPECT_EQ(step.close->failure, FailureClass::kLost);
  EXPECT_EQ(step.next.failures, 1);
  EXPECT_EQ(step.next.state, CellState::kBackoff);
  EXPECT_EQ(step.next.retry_at_unix_ms, kNow + kBase);
}

TEST(ExpireTest, AnUnconfirmedClaimCostsNoFailure) {
  CellLife cell = Apply(CellLife(), Claim{}, At(kNow)).next;  // the reply never arrived
  const Step step = Apply(cell, Expire{1, "lease expired"}, At(kNow));
  EXPECT_EQ(step.close->failure, FailureClass::kUnconfirmed);
  EXPECT_EQ(step.next.failures, 0);
  EXPECT_EQ(step.next.state, CellState::kBackoff);
  EXPECT_EQ(step.next.retry_at_unix_ms, kNow + kMargin);
  EXPECT_NE(step.close->reason.find("never confirmed"), std::string::npos);
  // However often it happens.
  for (int i = 0; i < 10; ++i) {
    cell = Apply(step.next, Claim{}, At(kNow + kMargin)).next;
    cell = Apply(cell, Expire{cell.attempt, "x"}, At(kNow)).next;
  }
  EXPECT_EQ(cell.failures, 0);
  EXPECT_EQ(cell.state, CellState::kBackoff);
}

TEST(ExpireTest, AnIntentWaitsOutTheFence) {
  const Step rerun = Apply(Apply(Running(2), Rerun{true}, At(kNow)).next, Expire{1, "x"}, At(kNow));
  EXPECT_EQ(rerun.next.state, CellState::kBackoff);
  EXPECT_EQ(rerun.next.retry_at_unix_ms, kNow + kMargin);
  EXPECT_EQ(rerun.next.failures, 0);
  EXPECT_TRUE(rerun.new_lineage);
  EXPECT_EQ(Apply(rerun.next, Claim{}, At(kNow + kMargin - 1)).verdict, Verdict::kNotClaimable);
  const Step cancel = Apply(Apply(Running(), Cancel{}, At(kNow)).next, Expire{1, "x"}, At(kNow));
  EXPECT_EQ(cancel.next.state, CellState::kCancelled);
  EXPECT_TRUE(cancel.ended_for_good);
}

TEST(ExpireTest, TheLastCountedLossFails) {
  const Step step = Apply(Running(2), Expire{1, "worker gone"}, At(kNow));
  EXPECT_EQ(step.next.state, CellState::kFailed);
  EXPECT_EQ(step.next.failures, 3);
  EXPECT_TRUE(step.ended_for_good);
}

TEST(LateSuccessTest, TakenWhileNoOtherAttemptRan) {
  const CellLife lost = Apply(Running(1), Expire{1, "lease expired"}, At(kNow)).next;
  Report r;
  r.attempt = 1;
  r.end = Reported(AttemptOutcome::kSucceeded);
  const Step step = Apply(lost, r, At(kNow + 1));
  ASSERT_EQ(step.verdict, Verdict::kApplied);
  EXPECT_TRUE(step.late_success);
  EXPECT_EQ(step.next.state, CellState::kSucceeded);
  EXPECT_EQ(step.next.failures, 1);  // the loss no longer counts
  EXPECT_EQ(step.close->outcome, "succeeded");
  // Once another attempt was claimed, it is fenced.
  const Step reclaim = Apply(lost, Claim{}, At(lost.retry_at_unix_ms));
  ASSERT_EQ(reclaim.verdict, Verdict::kApplied);
  EXPECT_EQ(Apply(reclaim.next, r, At(lost.retry_at_unix_ms)).verdict, Verdict::kFenced);
  // After a fresh rerun, its points are gone: fenced too.
  const CellLife fresh = Apply(lost, Rerun{true}, At(kNow)).next;
  EXPECT_EQ(Apply(fresh, r, At(kNow)).verdict, Verdict::kFenced);
  // A failure that comes late changes nothing.
  r.end = Exited(1);
  EXPECT_EQ(Apply(lost, r, At(kNow)).verdict, Verdict::kFenced);
}

TEST(HandBackTest, QueuesAtOnceWithoutAFailure) {
  const Step step = Apply(Running(1), HandBack{1, "worker exited"}, At(kNow));
  EXPECT_EQ(step.next.state, CellState::kQueued);
  EXPECT_EQ(step.next.failures, 1);
  EXPECT_EQ(step.close->outcome, "handed_back");
  EXPECT_EQ(step.close->reason, "worker exited");
}

// ----- trunks ----------------------------------------------------------------------------------

TEST(TrunkTest, SuccessWithoutTheLastCheckpointFailsUnlessExtended) {
  Report r;
  r.attempt = 1;
  r.end = Reported(AttemptOutcome::kSucceeded);
  r.trunk = {true, false, false, 4096};
  Step step = Apply(Running(), r, At(kNow));
  EXPECT_EQ(step.close->outcome, "failed");
  EXPECT_EQ(step.close->reason, "trunk ended without its checkpoint at 4096 tokens");
  EXPECT_EQ(step.next.state, CellState::kBackoff);
  r.trunk.extended = true;
  step = Apply(Running(), r, At(kNow));
  EXPECT_EQ(step.close->outcome, "succeeded");
  EXPECT_EQ(step.next.state, CellState::kQueued);
  step = Apply(Running(0, Intent::kCancel), r, At(kNow));
  EXPECT_EQ(step.next.state, CellState::kCancelled);
  r.trunk.checkpoint_at_budget = true;
  EXPECT_EQ(Apply(Running(), r, At(kNow)).next.state, CellState::kSucceeded);
}

TEST(TrunkTest, WaitingBranchesEndWithTheirTrunk) {
  CellLife branch;
  Step step = Apply(branch, TrunkEnded{CellState::kDiverged, "trunk x diverged"}, At(kNow));
  EXPECT_EQ(step.next.state, CellState::kDiverged);
  step = Apply(branch, TrunkEnded{CellState::kCancelled, ""}, At(kNow));
  EXPECT_EQ(step.next.state, CellState::kFailed);
  EXPECT_EQ(Apply(Running(), TrunkEnded{}, At(kNow)).verdict, Verdict::kUnchanged);
}

TEST(TrunkTest, AnExtendedTrunkThatSucceededRunsAgain) {
  CellLife trunk;
  trunk.state = CellState::kSucceeded;
  trunk.failures = 2;
  const Step step = Apply(trunk, Extend{}, At(kNow));
  EXPECT_EQ(step.next.state, CellState::kQueued);
  EXPECT_EQ(step.next.failures, 0);
  EXPECT_EQ(Apply(Running(), Extend{}, At(kNow)).verdict, Verdict::kUnchanged);
}

TEST(IntentNameTest, RoundTrips) {
  for (Intent i : {Intent::kNone, Intent::kCancel, Intent::kRerun, Intent::kRerunFresh,
                   Intent::kCancelFresh}) {
    EXPECT_EQ(IntentFromName(IntentName(i)), i);
  }
  EXPECT_FALSE(IntentFromName("later").has_value());
}

}  // namespace
}  // namespace onset::coordinator::life
