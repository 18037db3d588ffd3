#include "common/private_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "base/posix_io.h"

namespace onset::common {
namespace {

// Closes a descriptor on every return path.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd_ >= 0) close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

std::string Octal(mode_t mode) {
  char buf[8];
  std::snprintf(buf, sizeof(buf), "%04o", static_cast<unsigned>(mode & 07777));
  return buf;
}

}  // namespace

absl::StatusOr<std::string> ReadPrivateFile(const std::string& path, const std::string& what,
                                            size_t max_bytes) {
  // A FIFO or device is refused without blocking in open().
  const base::OpenedFile opened = base::OpenRegularFile(path);
  if (opened.err == ENOENT) return absl::NotFoundError(what + " " + path + " does not exist");
  if (opened.fd < 0 && opened.err == 0) {
    return absl::PermissionDeniedError(what + " " + path + " is " + opened.error);
  }
  if (opened.fd < 0) {
    return absl::PermissionDeniedError("cannot read " + what + " " + path + ": " + opened.error);
  }
  Fd fd(opened.fd);
  struct stat st {};
  if (fstat(fd.get(), &st) != 0) {
    return absl::PermissionDeniedError("cannot stat " + what + " " + path + ": " +
                                       std::strerror(errno));
  }
  if ((st.st_mode & (S_IRWXG | S_IRWXO)) != 0) {
    return absl::PermissionDeniedError(what + " " + path + " is accessible by group or others" +
                                       " (mode " + Octal(st.st_mode) + "): run chmod 600 " + path);
  }
  std::string text;
  if (const int err = base::ReadUpTo(fd.get(), max_bytes, &text); err != 0) {
    return absl::PermissionDeniedError("cannot read " + what + " " + path + ": " +
                                       std::strerror(err));
  }
  return text;
}

}  // namespace onset::common
