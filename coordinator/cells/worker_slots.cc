#include "coordinator/cells/worker_slots.h"

#include <string>

namespace onset::coordinator {

absl::StatusOr<int> WorkerSlots(int requested, size_t devices) {
  if (requested < 0 || requested > static_cast<int>(kMaxWorkerDevices)) {
    return absl::InvalidArgumentError("slots: must be 0.." + std::to_string(kMaxWorkerDevices));
  }
  if (devices > 0) return static_cast<int>(devices);
  return requested == 0 ? 1 : requested;
}

}  // namespace onset::coordinator
