// The devices a worker offers to its jobs, and how a job is started on the ones it is given.
//
// `onset-worker --devices LIST` names them:
//   cuda:0,1,3  or  cuda:0,cuda:1,cuda:3   GPUs by CUDA index -> "cuda:0", "cuda:1", "cuda:3"
//   cpu:N                                  N CPU slots        -> "cpu:0" ... "cpu:<N-1>"
// A worker offers GPUs or CPU slots, not both. The names are what the coordinator records and
// hands back with each job.
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace onset::worker {

// Devices (GPUs or CPU slots) one worker may offer at most.
inline constexpr int kMaxDevices = 1024;

// Parses a --devices list into device names, in the order given. InvalidArgument naming the
// bad part, e.g. "--devices: 'cuda:x': expected a CUDA device index (cuda:0,1)".
absl::StatusOr<std::vector<std::string>> ParseDevices(const std::string& list);

// Checks names as ParseDevices gives them: each "cuda:N" or "cpu:N", all of one kind, none
// repeated, 1 to kMaxDevices of them. InvalidArgument naming the first bad one.
absl::Status CheckDevices(const std::vector<std::string>& devices);

// How a job's trainer runs on its devices.
struct DeviceLaunch {
  std::string device;                // onset-train --device: "cuda" or "cpu"
  std::string cuda_visible_devices;  // "1,3" for cuda:1,cuda:3; "" (no GPU) for CPU slots
  int nproc = 1;                     // data-parallel ranks: one per device
};

// The launch for a job on `devices` (CheckDevices applies).
absl::StatusOr<DeviceLaunch> LaunchOn(const std::vector<std::string>& devices);

}  // namespace onset::worker
