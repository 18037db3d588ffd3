// The one write loop over a file descriptor: whole buffers, through short writes and signals.
#pragma once

#include <string_view>

namespace onset::base {

// Writes all of `data` to `fd`, retrying short writes and writes interrupted by a signal
// (EINTR). Returns 0, or the errno of the write that failed (EIO for a write that wrote
// nothing without saying why). What was written before a failure stays written.
int WriteAll(int fd, std::string_view data);

}  // namespace onset::base
