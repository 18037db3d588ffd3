#include "coordinator/store.h"

#include <algorithm>
#include <cstdio>

namespace onset::coordinator {

v1::CellState ToWire(CellState state) {
  switch (state) {
    case CellState::kQueued:
      return v1::CELL_STATE_QUEUED;
    case CellState::kRunning:
      return v1::CELL_STATE_RUNNING;
    case CellState::kSucceeded:
      return v1::CELL_STATE_SUCCEEDED;
    case CellState::kFailed:
      return v1::CELL_STATE_FAILED;
    case CellState::kDiverged:
      return v1::CELL_STATE_DIVERGED;
    case CellState::kCancelled:
      return v1::CELL_STATE_CANCELLED;
    case CellState::kBackoff:
      return v1::CELL_STATE_BACKOFF;
  }
  return v1::CELL_STATE_UNSPECIFIED;
}

std::optional<CellState> FromWire(v1::CellState state) {
  for (CellState s :
       {CellState::kQueued, CellState::kRunning, CellState::kSucceeded, CellState::kFailed,
        CellState::kDiverged, CellState::kCancelled, CellState::kBackoff}) {
    if (ToWire(s) == state) return s;
  }
  return std::nullopt;
}

const char* CellStateName(CellState state) {
  // The wire's names are string literals, so the view is NUL-terminated.
  return wire::StateName(ToWire(state)).data();
}

std::optional<CellState> CellStateFromName(const std::string& name) {
  std::optional<v1::CellState> state = wire::StateFromName(name);
  return state ? FromWire(*state) : std::nullopt;
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

absl::Status CheckSlurmJob(const std::string& slurm_job, const std::string& field) {
  if (slurm_job.size() > kMaxSlurmJobBytes) {
    return absl::InvalidArgumentError(field + ": " + std::to_string(slurm_job.size()) +
                                      " bytes; at most " + std::to_string(kMaxSlurmJobBytes));
  }
  for (size_t i = 0; i < slurm_job.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(slurm_job[i]);
    if (c > ' ' && c < 0x7f) continue;
    // The byte itself may be a control character: it is named, not echoed.
    char byte[8];
    std::snprintf(byte, sizeof(byte), "0x%02x", c);
    return absl::InvalidArgumentError(field + ": byte " + std::to_string(i + 1) + " (" + byte +
                                      ") is not printable ASCII; a Slurm job id looks like 1234 "
                                      "or 1234_5");
  }
  return absl::OkStatus();
}

}  // namespace onset::coordinator
