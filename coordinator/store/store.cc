#include "coordinator/store/store.h"

#include <algorithm>
#include <cstdio>

namespace onset::coordinator {

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
