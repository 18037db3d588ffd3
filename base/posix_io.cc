#include "base/posix_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace onset::base {

std::string HostName(const std::string& fallback) {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0 || name[0] == '\0') return fallback;
  return name;
}
namespace {

const char* KindOf(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  return "not a plain file";
}

}  // namespace

int WriteAll(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    if (n == 0) return EIO;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return 0;
}

int ReadUpTo(int fd, size_t max_bytes, std::string* out, bool* truncated) {
  if (truncated != nullptr) *truncated = false;
  char buffer[64 * 1024];
  size_t taken = 0;
  while (true) {
    // One byte past the limit tells a longer file from one of exactly max_bytes.
    const size_t want = std::min(sizeof(buffer), max_bytes - taken + 1);
    const ssize_t n = ::read(fd, buffer, want);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    if (n == 0) return 0;
    const size_t room = max_bytes - taken;
    if (static_cast<size_t>(n) > room) {
      out->append(buffer, room);
      if (truncated != nullptr) *truncated = true;
      return 0;
    }
    out->append(buffer, static_cast<size_t>(n));
    taken += static_cast<size_t>(n);
  }
}

OpenedFile OpenRegularFile(const std::string& path) {
  OpenedFile file;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) {
    file.err = errno;
    file.error = std::strerror(file.err);
    return file;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    file.err = errno;
    file.error = std::strerror(file.err);
    ::close(fd);
    return file;
  }
  if (!S_ISREG(st.st_mode)) {
    file.error = std::string("not a regular file (") + KindOf(st.st_mode) + ")";
    ::close(fd);
    return file;
  }
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
    file.err = errno;
    file.error = std::strerror(file.err);
    ::close(fd);
    return file;
  }
  file.fd = fd;
  return file;
}

}  // namespace onset::base
