// The POSIX file primitives every program shares: the one write loop over a file descriptor,
// and the one way to open a file that must be a regular file without hanging on a FIFO.
#pragma once

#include <string>
#include <string_view>

namespace onset::base {

// This machine's host name (gethostname), or `fallback` when it has none to tell.
std::string HostName(const std::string& fallback);

// Writes all of `data` to `fd`, retrying short writes and writes interrupted by a signal
// (EINTR). Returns 0, or the errno of the write that failed (EIO for a write that wrote
// nothing without saying why). What was written before a failure stays written.
int WriteAll(int fd, std::string_view data);

// Reads from `fd` until end of file, retrying reads interrupted by a signal, appending to `*out`
// at most `max_bytes` (a longer file stops there, with `*truncated` set when given). Returns 0,
// or the errno of the read that failed.
int ReadUpTo(int fd, size_t max_bytes, std::string* out, bool* truncated = nullptr);

// A file opened for reading by OpenRegularFile: `fd` >= 0 on success (the caller closes it);
// otherwise `fd` is -1 and `error` says why ("No such file or directory", "not a regular file
// (a FIFO)"), with `err` the errno or 0 when the file is of the wrong kind.
struct OpenedFile {
  int fd = -1;
  int err = 0;
  std::string error;
};

// Opens `path` read-only and close-on-exec and checks that it is a regular file. The open uses
// O_NONBLOCK, so a FIFO without a writer (or a device) is refused at once instead of blocking
// the caller in open(); the flag is cleared again before the descriptor is returned.
OpenedFile OpenRegularFile(const std::string& path);

}  // namespace onset::base
