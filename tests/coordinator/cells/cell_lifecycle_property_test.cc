// The cell lifecycle over random event sequences: whatever users, workers and leases do, in any
// order and from any attempt, the machine keeps its invariants (one open attempt at most, fenced
// events change nothing, failures counted only for real ones, intents carried out, lineages
// never mixed), and a cell that is then left to run ends.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>

#include "coordinator/cells/cell_lifecycle.h"

namespace onset::coordinator::life {
namespace {

constexpr int kSequences = 3000;
constexpr int kEvents = 120;
constexpr int64_t kMargin = 4'000;

bool Same(const CellLife& a, const CellLife& b) {
  return a.state == b.state && a.failures == b.failures &&
         a.retry_at_unix_ms == b.retry_at_unix_ms && a.intent == b.intent &&
         a.lineage == b.lineage && a.attempt == b.attempt && a.attempt_open == b.attempt_open &&
         a.attempt_lineage == b.attempt_lineage && a.contacted == b.contacted &&
         a.outcome == b.outcome && a.failure == b.failure;
}

std::string Describe(const CellLife& c) {
  return std::string(CellStateName(c.state)) + " failures=" + std::to_string(c.failures) +
         " intent=" + IntentName(c.intent) + " lineage=" + std::to_string(c.lineage) +
         " attempt=" + std::to_string(c.attempt) + (c.attempt_open ? " open" : " closed") +
         " outcome=" + c.outcome;
}

class Sequence {
 public:
  explicit Sequence(uint32_t seed) : rng_(seed) {
    context_.policy.max_failures = 3;
    context_.policy.base_backoff = std::chrono::milliseconds(1000);
    context_.policy.max_backoff = std::chrono::milliseconds(8000);
    context_.stop_margin_ms = kMargin;
    context_.now_unix_ms = 1'000'000;
  }

  // One random event, checked; false (with *why) when a property breaks.
  bool Step(std::string* why) {
    context_.now_unix_ms += Pick(0, 3000);
    Event event = RandomEvent();
    const CellLife before = cell_;
    const life::Step step = Apply(cell_, event, context_);
    if (!Check(before, event, step, why)) return false;
    cell_ = step.next;
    if (std::holds_alternative<Claim>(event) && step.verdict == Verdict::kApplied) {
      lineage_of_[cell_.attempt] = cell_.lineage;
    }
    return true;
  }

  // Lets the cell run: claim, confirm, succeed, as often as needed. Whether it ended within
  // `steps` steps (a cell waiting for its backoff is given the time).
  bool RunsToTheEnd(int steps) {
    for (int i = 0; i < steps; ++i) {
      if (cell_.state == CellState::kSucceeded || cell_.state == CellState::kFailed ||
          cell_.state == CellState::kDiverged || cell_.state == CellState::kCancelled) {
        return true;
      }
      Event event = Claim{};
      if (cell_.attempt_open) {
        Report r;
        r.attempt = cell_.attempt;
        r.end.outcome = AttemptOutcome::kSucceeded;
        r.end.exit_code = 0;
        event = r;
      } else if (cell_.state == CellState::kBackoff) {
        context_.now_unix_ms = std::max(context_.now_unix_ms, cell_.retry_at_unix_ms);
      }
      cell_ = Apply(cell_, event, context_).next;
      if (!CheckInvariants(cell_, context_.policy).empty()) return false;
    }
    return false;
  }

  const CellLife& cell() const { return cell_; }

 private:
  int Pick(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }

  // An attempt number near the current one: the current, an earlier or one never claimed.
  int SomeAttempt() {
    const int r = Pick(0, 9);
    if (r < 6) return cell_.attempt;
    if (r < 9) return std::max(0, cell_.attempt - Pick(1, 3));
    return cell_.attempt + 1;
  }

  AttemptEnd RandomEnd() {
    AttemptEnd end;
    switch (Pick(0, 7)) {
      case 0:
      case 1:
        end.outcome = AttemptOutcome::kSucceeded;
        end.exit_code = 0;
        break;
      case 2:
        end.outcome = AttemptOutcome::kDiverged;
        end.exit_code = 3;
        break;
      case 3:
        end.outcome = AttemptOutcome::kHandedBack;
        end.exit_code = 4;
        break;
      case 4:
        end.outcome = AttemptOutcome::kCancelled;
        end.exit_code = 4;
        break;
      case 5:
        end.outcome = AttemptOutcome::kFailed;
        end.exit_code = 2;  // config: not retried
        break;
      default:
        end.outcome = AttemptOutcome::kFailed;
        end.exit_code = 1;
        break;
    }
    return end;
  }

  Event RandomEvent() {
    switch (Pick(0, 11)) {
      case 0:
      case 1:
        return Claim{};
      case 2:
      case 3:
        return Contact{SomeAttempt()};
      case 4:
      case 5: {
        Report r;
        r.attempt = SomeAttempt();
        r.end = RandomEnd();
        if (Pick(0, 5) == 0) r.trunk = {true, Pick(0, 1) == 1, Pick(0, 1) == 1, 1000};
        return r;
      }
      case 6:
        return Expire{SomeAttempt(), "lease expired"};
      case 7:
        return HandBack{SomeAttempt(), "handed back"};
      case 8:
        return Cancel{};
      case 9:
        return Rerun{Pick(0, 1) == 1};
      case 10:
        return TrunkEnded{Pick(0, 1) ? CellState::kDiverged : CellState::kFailed, "trunk ended"};
      default:
        return Extend{};
    }
  }

  bool Check(const CellLife& before, const Event& event, const life::Step& step, std::string* why) {
    auto fail = [&](const std::string& what) {
      *why = what + "\n  before: " + Describe(before) + "\n  after:  " + Describe(step.next) +
             "\n  event #" + std::to_string(event.index());
      return false;
    };
    if (std::string broken = CheckInvariants(step.next, context_.policy); !broken.empty()) {
      return fail("invariant: " + broken);
    }
    if (step.verdict != Verdict::kApplied && !Same(before, step.next)) {
      return fail("an event that was not applied changed the cell");
    }
    if (step.verdict != Verdict::kApplied) return true;
    // Never two attempts at once.
    if (std::holds_alternative<Claim>(event) && before.attempt_open) {
      return fail("claimed a cell with an open attempt");
    }
    // What an attempt says counts only while it is the current one, in its lineage.
    int from = -1;
    if (auto* c = std::get_if<Contact>(&event)) from = c->attempt;
    if (auto* r = std::get_if<Report>(&event)) from = r->attempt;
    if (from >= 0) {
      if (from != before.attempt) return fail("an earlier attempt was heard");
      if (!before.attempt_open && !step.late_success) return fail("an ended attempt was heard");
      if (lineage_of_[from] != before.lineage)
        return fail("an attempt of another lineage was heard");
    }
    if (step.new_lineage && (step.next.lineage != before.lineage + 1 || step.next.attempt_open)) {
      return fail("a new lineage began while an attempt of the old one was open");
    }
    // Failures counted only for real ones: a crash reported, or a loss of a confirmed attempt.
    if (step.next.failures > before.failures) {
      const bool crash = std::holds_alternative<Report>(event) && step.close &&
                         step.close->failure == FailureClass::kCrash;
      const bool loss = std::holds_alternative<Expire>(event) && before.contacted;
      if (!crash && !loss) return fail("a failure was counted for no failure");
      if (step.next.failures != before.failures + 1) return fail("two failures counted at once");
    }
    // After an expiry nobody claims the cell before its worker must have stopped the trainer.
    if (std::holds_alternative<Expire>(event) &&
        Claimable(step.next, context_.now_unix_ms + kMargin - 1)) {
      return fail("claimable before the stop margin after an expiry");
    }
    // A cancel that waited is carried out when the attempt ends (a success stands unless a
    // fresh rerun was asked for too).
    if (step.close && !step.next.attempt_open && !step.late_success) {
      if (before.intent == Intent::kCancel && step.next.state != CellState::kCancelled &&
          step.next.state != CellState::kSucceeded) {
        return fail("a pending cancel was not carried out");
      }
      if (before.intent == Intent::kCancelFresh && step.next.state != CellState::kCancelled) {
        return fail("a pending cancel after a fresh rerun was not carried out");
      }
    }
    // A fresh rerun asked for is carried out, whatever came after it: the cell never ends an
    // attempt (nor goes on) in the lineage it was asked to leave.
    if ((before.intent == Intent::kRerunFresh || before.intent == Intent::kCancelFresh) &&
        step.close && !step.late_success && !step.new_lineage) {
      return fail("a pending fresh rerun was dropped");
    }
    if (before.attempt_open &&
        (before.intent == Intent::kRerunFresh || before.intent == Intent::kCancelFresh) &&
        std::holds_alternative<Cancel>(event) && step.next.intent != Intent::kCancelFresh) {
      return fail("a cancel dropped a pending fresh rerun");
    }
    if (step.ended_for_good && step.next.state != CellState::kFailed &&
        step.next.state != CellState::kDiverged && step.next.state != CellState::kCancelled) {
      return fail("ended for good in a state that is not an end");
    }
    return true;
  }

  std::mt19937 rng_;
  Context context_;
  CellLife cell_;
  std::map<int, int> lineage_of_;  // attempt -> the lineage it was claimed in
};

TEST(CellLifecyclePropertyTest, RandomEventsKeepTheInvariantsAndCellsEnd) {
  for (uint32_t seed = 1; seed <= kSequences; ++seed) {
    Sequence sequence(seed);
    std::string why;
    for (int i = 0; i < kEvents; ++i) {
      ASSERT_TRUE(sequence.Step(&why)) << "seed " << seed << ", event " << i << ": " << why;
    }
    EXPECT_TRUE(sequence.RunsToTheEnd(40))
        << "seed " << seed << ": did not end: " << Describe(sequence.cell());
  }
}

}  // namespace
}  // namespace onset::coordinator::life
