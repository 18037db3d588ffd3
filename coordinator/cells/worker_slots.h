// The slot rule: how many jobs a worker runs at once. A job takes one device at least, so a
// worker that names its devices runs at most one job per device, whatever slots it asked for; one
// that names none runs the slots it registered (0 meaning 1), each job on one device.
#pragma once

#include <cstddef>

#include "absl/status/statusor.h"

namespace onset::coordinator {

// Devices one worker may offer at most.
inline constexpr size_t kMaxWorkerDevices = 1024;

// The slots a registering worker gets from the `requested` slots and the number of `devices` it
// named. InvalidArgument "slots: must be 0..N" when `requested` is negative or above
// kMaxWorkerDevices.
absl::StatusOr<int> WorkerSlots(int requested, size_t devices);

}  // namespace onset::coordinator
