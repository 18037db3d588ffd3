#include "coordinator/cells/worker_slots.h"

#include <gtest/gtest.h>

namespace onset::coordinator {
namespace {

TEST(WorkerSlotsTest, NoSlotsMeansOne) { EXPECT_EQ(WorkerSlots(0, 0).value(), 1); }

TEST(WorkerSlotsTest, WithoutDevicesTheRequestedSlotsHold) {
  EXPECT_EQ(WorkerSlots(1, 0).value(), 1);
  EXPECT_EQ(WorkerSlots(4, 0).value(), 4);
  EXPECT_EQ(WorkerSlots(static_cast<int>(kMaxWorkerDevices), 0).value(),
            static_cast<int>(kMaxWorkerDevices));
}

TEST(WorkerSlotsTest, NamedDevicesGiveOneSlotEach) {
  EXPECT_EQ(WorkerSlots(0, 2).value(), 2);
  EXPECT_EQ(WorkerSlots(8, 2).value(), 2);  // more slots than devices: one job per device
  EXPECT_EQ(WorkerSlots(1, 3).value(), 3);
}

TEST(WorkerSlotsTest, SlotsOutOfRangeAreRefused) {
  for (int requested : {-1, static_cast<int>(kMaxWorkerDevices) + 1}) {
    absl::StatusOr<int> slots = WorkerSlots(requested, 1);
    ASSERT_FALSE(slots.ok()) << requested;
    EXPECT_EQ(slots.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(slots.status().message(), "slots: must be 0..1024");
  }
}

}  // namespace
}  // namespace onset::coordinator
