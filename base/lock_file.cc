#include "base/lock_file.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>

namespace onset::base {

std::string LockFileFor(const std::string& db_path) { return db_path + ".lock"; }

bool LockHeld(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) return false;
  bool held = false;
  if (::flock(fd, LOCK_SH | LOCK_NB) != 0) {
    held = errno == EWOULDBLOCK;
  } else {
    ::flock(fd, LOCK_UN);
  }
  ::close(fd);
  return held;
}

}  // namespace onset::base
