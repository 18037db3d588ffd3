#include "worker/devices.h"

#include <algorithm>
#include <charconv>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace onset::worker {
namespace {

const std::string kCuda = "cuda:";
const std::string kCpu = "cpu:";

// A decimal number from 0 to kMaxDevices, without sign or spaces.
std::optional<int> Number(const std::string& s) {
  int v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size() || v < 0 || v > kMaxDevices) {
    return std::nullopt;
  }
  return v;
}

bool StartsWith(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

absl::Status Bad(const std::string& part, const std::string& problem) {
  return absl::InvalidArgumentError(absl::StrCat("--devices: '", part, "': ", problem));
}

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    const size_t end = s.find(sep, start);
    parts.push_back(s.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) return parts;
    start = end + 1;
  }
}

}  // namespace

absl::StatusOr<std::vector<std::string>> ParseDevices(const std::string& list) {
  if (list.empty()) {
    return absl::InvalidArgumentError(
        "--devices: empty; name GPUs (cuda:0,1) or a number of CPU slots (cpu:4)");
  }
  if (StartsWith(list, kCpu)) {
    std::optional<int> n = Number(list.substr(kCpu.size()));
    if (!n || *n < 1) {
      return Bad(list, absl::StrCat("cpu:N takes the number of CPU slots, 1 to ", kMaxDevices,
                                    " (e.g. cpu:4)"));
    }
    std::vector<std::string> slots;
    for (int i = 0; i < *n; ++i) slots.push_back(absl::StrCat(kCpu, i));
    return slots;
  }
  if (!StartsWith(list, kCuda)) {
    return Bad(list, "expected GPUs (cuda:0,1) or a number of CPU slots (cpu:4)");
  }
  // "cuda:0,1,3" and "cuda:0,cuda:1,cuda:3" (and any mix of the two) name the same GPUs.
  std::vector<std::string> devices;
  for (const std::string& part : Split(list.substr(kCuda.size()), ',')) {
    if (StartsWith(part, kCpu)) return Bad(part, "a worker offers GPUs or CPU slots, not both");
    std::optional<int> n = Number(StartsWith(part, kCuda) ? part.substr(kCuda.size()) : part);
    if (!n || *n >= kMaxDevices) {
      return Bad(part.empty() ? list : part, "expected a CUDA device index (cuda:0,1)");
    }
    const std::string device = absl::StrCat(kCuda, *n);
    if (std::find(devices.begin(), devices.end(), device) != devices.end()) {
      return Bad(part, absl::StrCat(device, " is listed twice"));
    }
    devices.push_back(device);
  }
  if (devices.size() > static_cast<size_t>(kMaxDevices)) {
    return Bad(list, absl::StrCat("more than ", kMaxDevices, " GPUs"));
  }
  return devices;
}

absl::Status CheckDevices(const std::vector<std::string>& devices) {
  if (devices.empty()) return absl::InvalidArgumentError("devices: none given");
  if (devices.size() > static_cast<size_t>(kMaxDevices)) {
    return absl::InvalidArgumentError(
        absl::StrCat("devices: ", devices.size(), " given; at most ", kMaxDevices));
  }
  // The first device decides the kind; every name is written as ParseDevices writes it.
  const bool cuda = StartsWith(devices.front(), kCuda);
  const std::string& prefix = cuda ? kCuda : kCpu;
  for (auto it = devices.begin(); it != devices.end(); ++it) {
    const std::optional<int> n =
        StartsWith(*it, prefix) ? Number(it->substr(prefix.size())) : std::nullopt;
    if (!n || *n >= kMaxDevices || *it != absl::StrCat(prefix, *n)) {
      const bool other_kind = StartsWith(*it, cuda ? kCpu : kCuda);
      return absl::InvalidArgumentError(absl::StrCat(
          "devices: '", *it, "' is not a ", cuda ? "CUDA device (cuda:N)" : "CPU slot (cpu:N)",
          other_kind ? "; a worker offers GPUs or CPU slots, not both" : ""));
    }
    if (std::find(devices.begin(), it, *it) != it) {
      return absl::InvalidArgumentError(absl::StrCat("devices: ", *it, " is listed twice"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<DeviceLaunch> LaunchOn(const std::vector<std::string>& devices) {
  if (absl::Status s = CheckDevices(devices); !s.ok()) return s;
  DeviceLaunch launch;
  launch.nproc = static_cast<int>(devices.size());
  if (!StartsWith(devices.front(), kCuda)) {
    launch.device = "cpu";
    return launch;  // and no GPU visible
  }
  launch.device = "cuda";
  std::vector<std::string> indices;
  for (const std::string& d : devices) indices.push_back(d.substr(kCuda.size()));
  launch.cuda_visible_devices = absl::StrJoin(indices, ",");
  return launch;
}

}  // namespace onset::worker
