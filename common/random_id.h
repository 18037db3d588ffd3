// Unguessable identifiers (lease ids, worker ids) from the operating system's CSPRNG.
#pragma once

#include <string>

namespace onset::common {

// `bytes` random bytes as 2*bytes lowercase hex digits. Thread-safe. Crashes if the system
// random source fails, which leaves nothing safe to do.
std::string RandomHex(int bytes);

}  // namespace onset::common
