// The claim rule on queues whose answer is known by hand.
#include "coordinator/cells/claim_rule.h"

#include <gtest/gtest.h>

namespace onset::coordinator {
namespace {

constexpr int64_t kNow = 1'000'000;

WaitingCell Queued(int devices = 1) { return {v1::CELL_STATE_QUEUED, 0, devices, true}; }
WaitingCell Backoff(int64_t retry_at, int devices = 1) {
  return {v1::CELL_STATE_BACKOFF, retry_at, devices, true};
}
WaitingCell Branch(bool ready) { return {v1::CELL_STATE_QUEUED, 0, 1, ready}; }

TEST(ClaimRuleTest, TheFirstQueuedCellInQueueOrder) {
  EXPECT_EQ(NextClaim({Queued(), Queued()}, kNow, 1), 0u);
  EXPECT_EQ(NextClaim({}, kNow, 4), std::nullopt);
}

TEST(ClaimRuleTest, ACellTooBigForTheFreeDevicesIsPassedOverNotWaitedFor) {
  EXPECT_EQ(NextClaim({Queued(4), Queued(2), Queued(1)}, kNow, 2), 1u);
  EXPECT_EQ(NextClaim({Queued(4), Queued(2)}, kNow, 1), std::nullopt);
  EXPECT_EQ(NextClaim({Queued(4)}, kNow, 4), 0u);  // exactly as many as free
}

TEST(ClaimRuleTest, ABackoffRunsOnceItsRetryTimeHasCome) {
  EXPECT_EQ(NextClaim({Backoff(kNow + 1), Queued()}, kNow, 1), 1u);
  EXPECT_EQ(NextClaim({Backoff(kNow), Queued()}, kNow, 1), 0u);  // due at its time exactly
  EXPECT_EQ(NextClaim({Backoff(kNow - 5)}, kNow, 1), 0u);
  EXPECT_EQ(NextClaim({Backoff(kNow + 1)}, kNow, 1), std::nullopt);
}

TEST(ClaimRuleTest, ABranchWaitsForItsTrunksCheckpointWithoutHoldingUpOthers) {
  EXPECT_EQ(NextClaim({Branch(false), Queued()}, kNow, 1), 1u);
  EXPECT_EQ(NextClaim({Branch(true), Queued()}, kNow, 1), 0u);
  EXPECT_EQ(NextClaim({Branch(false)}, kNow, 1), std::nullopt);
}

TEST(ClaimRuleTest, CellsInOtherStatesAreNeverClaimed) {
  for (v1::CellState state :
       {v1::CELL_STATE_RUNNING, v1::CELL_STATE_SUCCEEDED, v1::CELL_STATE_FAILED,
        v1::CELL_STATE_DIVERGED, v1::CELL_STATE_CANCELLED, v1::CELL_STATE_UNSPECIFIED}) {
    EXPECT_FALSE(Claimable({state, 0, 1, true}, kNow, 8)) << state;
  }
}

}  // namespace
}  // namespace onset::coordinator
