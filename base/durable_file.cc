#include "base/durable_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <stdexcept>

#include "base/posix_io.h"

namespace onset::base {
namespace {

std::string ErrnoOf(const std::string& what, const std::string& path, int err) {
  return path + ": " + what + ": " + std::strerror(err);
}

std::string Errno(const std::string& what, const std::string& path) {
  return ErrnoOf(what, path, errno);
}

}  // namespace

std::string UniqueTempName(const std::string& path) {
  static std::atomic<uint64_t> serial{0};
  static const uint64_t salt = [] {
    std::random_device device;
    return (static_cast<uint64_t>(device()) << 32) ^ device();
  }();
  char suffix[64];
  std::snprintf(suffix, sizeof(suffix), ".tmp-%d-%016llx", static_cast<int>(::getpid()),
                static_cast<unsigned long long>(salt + serial.fetch_add(1)));
  return path + suffix;
}

void MakeDirs(const std::string& dir) {
  for (size_t pos = 1; pos <= dir.size(); ++pos) {
    if (pos < dir.size() && dir[pos] != '/') continue;
    const std::string prefix = dir.substr(0, pos);
    if (::mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST) {
      throw std::runtime_error(Errno("cannot create directory", prefix));
    }
  }
}

std::optional<std::string> TryWriteFileDurably(const std::string& path, std::string_view bytes,
                                               const DurableWriteOptions& options) {
  const bool replace = options.if_exists == IfExists::kReplace;
  // A temporary file of this writer's own (O_EXCL), never one another writer may be filling:
  // two processes writing one path (on one machine or on shared storage) each rename a whole
  // file into place.
  const std::string tmp = UniqueTempName(path);
  const int flags = O_WRONLY | O_CREAT | O_CLOEXEC | O_EXCL;
  const int fd = ::open(tmp.c_str(), flags, options.mode.value_or(0644));
  if (fd < 0) return Errno("cannot create", tmp);
  auto fail = [&](const std::string& what, int err, bool open) {
    if (open) ::close(fd);
    ::unlink(tmp.c_str());
    return ErrnoOf(what, tmp, err);
  };
  if (options.mode && ::fchmod(fd, *options.mode) != 0) return fail("cannot chmod", errno, true);
  if (int err = WriteAll(fd, bytes); err != 0) return fail("cannot write", err, true);
  if (::fsync(fd) != 0) return fail("cannot flush", errno, true);
  if (::close(fd) != 0) return fail("cannot flush", errno, false);
  if (replace) {
    if (::rename(tmp.c_str(), path.c_str()) != 0) {
      return fail("cannot rename into place", errno, false);
    }
  } else {
    const int linked = ::link(tmp.c_str(), path.c_str());
    const int err = errno;
    ::unlink(tmp.c_str());
    if (linked != 0 && err != EEXIST) return ErrnoOf("cannot link into place", tmp, err);
  }
  // Make the rename (or link) itself durable.
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "."
                          : slash == 0               ? "/"
                                                     : path.substr(0, slash);
  if (int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
  return std::nullopt;
}

void WriteFileDurably(const std::string& path, std::string_view bytes,
                      const DurableWriteOptions& options) {
  if (std::optional<std::string> error = TryWriteFileDurably(path, bytes, options)) {
    throw std::runtime_error(*error);
  }
}

std::optional<std::string> ReadFile(const std::string& path, std::string* out) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Errno("cannot open", path);
  std::string bytes;
  char buf[1 << 16];
  while (true) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const std::string message = Errno("cannot read", path);
      ::close(fd);
      return message;
    }
    if (n == 0) break;
    bytes.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  *out = std::move(bytes);
  return std::nullopt;
}

}  // namespace onset::base
