// A full disk, on demand, for the lifecycle simulator (simulation.h): preloaded into onsetd
// (LD_PRELOAD), it makes every write to a regular file fail with ENOSPC while the file named by
// ONSET_SIM_FULL_DISK exists, as a disk that filled up would. SQLite then reports SQLITE_FULL;
// other writes (pipes, sockets, the log) go on.
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

namespace {

bool DiskFull(int fd) {
  const char* flag = getenv("ONSET_SIM_FULL_DISK");
  struct stat st;
  if (flag == nullptr || *flag == '\0' || stat(flag, &st) != 0) return false;
  return fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
}

}  // namespace

extern "C" {

ssize_t write(int fd, const void* buf, size_t count) {
  static ssize_t (*real)(int, const void*, size_t) = nullptr;
  if (real == nullptr)
    real = reinterpret_cast<ssize_t (*)(int, const void*, size_t)>(dlsym(RTLD_NEXT, "write"));
  if (DiskFull(fd)) {
    errno = ENOSPC;
    return -1;
  }
  return real(fd, buf, count);
}

ssize_t pwrite(int fd, const void* buf, size_t count, off_t offset) {
  static ssize_t (*real)(int, const void*, size_t, off_t) = nullptr;
  if (real == nullptr)
    real =
        reinterpret_cast<ssize_t (*)(int, const void*, size_t, off_t)>(dlsym(RTLD_NEXT, "pwrite"));
  if (DiskFull(fd)) {
    errno = ENOSPC;
    return -1;
  }
  return real(fd, buf, count, offset);
}

ssize_t pwrite64(int fd, const void* buf, size_t count, off64_t offset) {
  static ssize_t (*real)(int, const void*, size_t, off64_t) = nullptr;
  if (real == nullptr) {
    real = reinterpret_cast<ssize_t (*)(int, const void*, size_t, off64_t)>(
        dlsym(RTLD_NEXT, "pwrite64"));
  }
  if (DiskFull(fd)) {
    errno = ENOSPC;
    return -1;
  }
  return real(fd, buf, count, offset);
}

}  // extern "C"
