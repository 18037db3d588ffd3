#include "common/study_text.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

namespace onset::common {
namespace {

// 1-based line of byte `offset`.
int LineAt(std::string_view text, size_t offset) {
  return 1 + static_cast<int>(std::count(text.begin(), text.begin() + offset, '\n'));
}

std::string Hex(unsigned char c) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "0x%02x", c);
  return buf;
}

std::string TooLarge(const std::string& source, const std::string& size) {
  return source + ":1: the file is " + size + " bytes; a study file is at most " +
         std::to_string(kMaxStudyFileBytes) + " bytes (1 MiB)";
}

absl::Status ReadError(const std::string& what, const std::string& path, int err) {
  const std::string message = what + " " + path + ": " + std::strerror(err);
  if (err == ENOENT || err == ENOTDIR) return absl::NotFoundError(message);
  if (err == EACCES || err == EPERM) return absl::PermissionDeniedError(message);
  return absl::InternalError(message);
}

}  // namespace

size_t FirstInvalidUtf8(std::string_view text) {
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  size_t i = 0;
  while (i < n) {
    const unsigned char c = s[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t len = 0;
    unsigned char lo = 0x80, hi = 0xBF;  // the allowed range of the second byte
    if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      if (c == 0xE0) lo = 0xA0;  // overlong
      if (c == 0xED) hi = 0x9F;  // surrogates
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      if (c == 0xF0) lo = 0x90;  // overlong
      if (c == 0xF4) hi = 0x8F;  // above U+10FFFF
    } else {
      return i;
    }
    if (i + len > n) return i;
    if (s[i + 1] < lo || s[i + 1] > hi) return i;
    for (size_t k = 2; k < len; ++k) {
      if (s[i + k] < 0x80 || s[i + k] > 0xBF) return i;
    }
    i += len;
  }
  return std::string_view::npos;
}

absl::Status CheckStudyText(const std::string& source, std::string_view text) {
  if (text.size() > kMaxStudyFileBytes) {
    return absl::InvalidArgumentError(TooLarge(source, std::to_string(text.size())));
  }
  if (const size_t nul = text.find('\0'); nul != std::string_view::npos) {
    return absl::InvalidArgumentError(source + ":" + std::to_string(LineAt(text, nul)) +
                                      ": the file is not text: a NUL byte at offset " +
                                      std::to_string(nul));
  }
  if (const size_t bad = FirstInvalidUtf8(text); bad != std::string_view::npos) {
    return absl::InvalidArgumentError(
        source + ":" + std::to_string(LineAt(text, bad)) + ": the file is not UTF-8 text (byte " +
        Hex(static_cast<unsigned char>(text[bad])) + " at offset " + std::to_string(bad) + ")");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadStudyFile(const std::string& path) {
  // O_NONBLOCK: opening a FIFO with no writer must not hang; cleared again below.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return ReadError("cannot open", path, errno);
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) return ReadError("cannot read", path, errno);
  if (S_ISDIR(st.st_mode)) {
    return absl::InvalidArgumentError(path + " is a directory, not a study file");
  }
  if (S_ISREG(st.st_mode) && static_cast<uint64_t>(st.st_size) > kMaxStudyFileBytes) {
    return absl::InvalidArgumentError(TooLarge(path, std::to_string(st.st_size)));
  }
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  // Read one byte past the limit at most, whatever the file claims its size is.
  std::string text;
  char buf[65536];
  while (text.size() <= kMaxStudyFileBytes) {
    const size_t want = std::min(sizeof buf, kMaxStudyFileBytes + 1 - text.size());
    const ssize_t got = ::read(fd, buf, want);
    if (got < 0) {
      if (errno == EINTR) continue;
      if (errno == EISDIR) {
        return absl::InvalidArgumentError(path + " is a directory, not a study file");
      }
      return ReadError("cannot read", path, errno);
    }
    if (got == 0) break;
    text.append(buf, static_cast<size_t>(got));
  }
  if (text.size() > kMaxStudyFileBytes) {
    return absl::InvalidArgumentError(
        TooLarge(path, "more than " + std::to_string(kMaxStudyFileBytes)));
  }
  if (absl::Status s = CheckStudyText(path, text); !s.ok()) return s;
  return text;
}

}  // namespace onset::common
