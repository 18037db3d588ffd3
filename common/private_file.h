// Files that hold secrets (a token, webhook URLs): read only when no one but their owner may
// touch them, as ssh reads a key. No gRPC.
#pragma once

#include <cstddef>
#include <string>

#include "absl/status/statusor.h"

namespace onset::common {

// The first `max_bytes` bytes of the file at `path`, which `what` names in messages ("token
// file", "notify URL file"). NotFound "WHAT PATH does not exist"; PermissionDenied when it is
// not a regular file (a FIFO or a device is refused without blocking), when group or others have
// any access to it (the message says to chmod 600) or when it cannot be read.
absl::StatusOr<std::string> ReadPrivateFile(const std::string& path, const std::string& what,
                                            size_t max_bytes);

}  // namespace onset::common
