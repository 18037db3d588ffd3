// A FIFO (named pipe) where a file is expected, and a guard for the call that reads it: a call
// that blocks in open() on a FIFO without a writer would hang the test for good, so the guard
// opens the FIFO's write end once its patience runs out, which releases the call, and reports
// that it had to. Plain POSIX, no GoogleTest (like temp_dir.h).
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <functional>
#include <future>
#include <stdexcept>
#include <string>

namespace onset::testutil {

// Makes a FIFO at `path` (mode 0600) and returns the path.
inline std::string MakeFifo(const std::string& path) {
  if (::mkfifo(path.c_str(), 0600) != 0) {
    throw std::runtime_error("cannot make a FIFO " + path + ": " + std::strerror(errno));
  }
  return path;
}

// Runs `call`, which reads `fifo`, and returns whether it returned by itself within `patience`.
// When it did not, the FIFO's write end is opened and closed (the reader then sees an empty
// file) and the call is waited for, so the test goes on and fails instead of hanging.
inline bool ReturnsWithoutAWriter(const std::string& fifo, const std::function<void()>& call,
                                  std::chrono::seconds patience = std::chrono::seconds(10)) {
  std::future<void> done = std::async(std::launch::async, call);
  if (done.wait_for(patience) == std::future_status::ready) {
    done.get();
    return true;
  }
  const int fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd >= 0) ::close(fd);
  done.get();
  return false;
}

}  // namespace onset::testutil
