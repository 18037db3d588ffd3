#include "coordinator/store.h"

#include <algorithm>

namespace onset::coordinator {

const char* CellStateName(CellState state) {
  switch (state) {
    case CellState::kQueued:
      return "queued";
    case CellState::kRunning:
      return "running";
    case CellState::kSucceeded:
      return "succeeded";
    case CellState::kFailed:
      return "failed";
    case CellState::kDiverged:
      return "diverged";
    case CellState::kCancelled:
      return "cancelled";
    case CellState::kBackoff:
      return "backoff";
  }
  return "queued";
}

std::optional<CellState> CellStateFromName(const std::string& name) {
  for (CellState s :
       {CellState::kQueued, CellState::kRunning, CellState::kSucceeded, CellState::kFailed,
        CellState::kDiverged, CellState::kCancelled, CellState::kBackoff}) {
    if (name == CellStateName(s)) return s;
  }
  return std::nullopt;
}

absl::Status CheckDeviceNames(const std::vector<std::string>& devices, const std::string& field) {
  if (devices.size() > kMaxWorkerDevices) {
    return absl::InvalidArgumentError(field + ": " + std::to_string(devices.size()) +
                                      " devices; at most " + std::to_string(kMaxWorkerDevices) +
                                      " are allowed");
  }
  for (auto it = devices.begin(); it != devices.end(); ++it) {
    if (it->empty() || it->size() > kMaxDeviceNameBytes || it->find(',') != std::string::npos) {
      return absl::InvalidArgumentError(field + ": '" + *it + "' is not a device name");
    }
    if (std::find(devices.begin(), it, *it) != it) {
      return absl::InvalidArgumentError(field + ": " + *it + " is listed twice");
    }
  }
  return absl::OkStatus();
}

}  // namespace onset::coordinator
