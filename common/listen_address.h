// A "host:port" address (the coordinator's listen address, or the one a client dials): its host
// part, and whether that host is this machine's loopback interface (where a plaintext token
// cannot be overheard by other machines).
#pragma once

#include <string>

namespace onset::common {

// "host:port" -> host (brackets kept for IPv6, "[::1]"). Empty on a malformed address.
std::string HostOf(const std::string& listen);

// True for "localhost", 127.0.0.0/8 and [::1]; false for anything else, wildcards included.
bool IsLoopbackHost(const std::string& host);

}  // namespace onset::common
