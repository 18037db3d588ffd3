#include "model/data/token_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/posix_io.h"

namespace onset::model {
namespace {

template <typename T>
int64_t FirstOutOfRange(const void* data, int64_t n, int64_t limit) {
  const T* p = static_cast<const T*>(data);
  for (int64_t i = 0; i < n; ++i) {
    if (static_cast<int64_t>(p[i]) >= limit) return i;
  }
  return -1;
}

}  // namespace

std::optional<TokenDtype> ParseTokenDtype(const std::string& name) {
  if (name == "uint16") return TokenDtype::kUint16;
  if (name == "uint32") return TokenDtype::kUint32;
  return std::nullopt;
}

int TokenBytes(TokenDtype dtype) { return dtype == TokenDtype::kUint16 ? 2 : 4; }

std::unique_ptr<TokenFile> TokenFile::Open(const std::string& path, TokenDtype dtype,
                                           int text_tokens, std::string* error) {
  // A FIFO is refused at once: open() on one without a writer would block the trainer.
  const base::OpenedFile opened = base::OpenRegularFile(path);
  if (opened.fd < 0) {
    *error = path + (opened.err != 0 ? ": cannot open: " : ": ") + opened.error;
    return nullptr;
  }
  const int fd = opened.fd;
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    *error = path + ": cannot stat: " + std::strerror(errno);
    ::close(fd);
    return nullptr;
  }
  const size_t bytes = static_cast<size_t>(st.st_size);
  const int width = TokenBytes(dtype);
  const char* dtype_name = dtype == TokenDtype::kUint16 ? "uint16" : "uint32";
  if (bytes == 0) {
    *error = path + ": the file is empty";
    ::close(fd);
    return nullptr;
  }
  if (bytes % width != 0) {
    *error = path + ": " + std::to_string(bytes) + " bytes is not a whole number of " + dtype_name +
             " tokens (is data.dtype right?)";
    ::close(fd);
    return nullptr;
  }
  void* data = ::mmap(nullptr, bytes, PROT_READ, MAP_PRIVATE, fd, 0);
  const int mmap_errno = errno;
  ::close(fd);
  if (data == MAP_FAILED) {
    *error = path + ": cannot map: " + std::strerror(mmap_errno);
    return nullptr;
  }
  ::madvise(data, bytes, MADV_SEQUENTIAL);
  std::unique_ptr<TokenFile> file(new TokenFile(path, dtype, data, bytes));
  const int64_t bad = dtype == TokenDtype::kUint16
                          ? FirstOutOfRange<uint16_t>(data, file->size(), text_tokens)
                          : FirstOutOfRange<uint32_t>(data, file->size(), text_tokens);
  if (bad >= 0) {
    *error = path + ": token id " +
             std::to_string(static_cast<int64_t>(dtype == TokenDtype::kUint16
                                                     ? static_cast<const uint16_t*>(data)[bad]
                                                     : static_cast<const uint32_t*>(data)[bad])) +
             " at token " + std::to_string(bad) + " (byte offset " + std::to_string(bad * width) +
             ") is outside the vocabulary: data.vocab_size is " + std::to_string(text_tokens);
    return nullptr;
  }
  ::madvise(data, bytes, MADV_RANDOM);
  return file;
}

TokenFile::~TokenFile() { ::munmap(const_cast<void*>(data_), bytes_); }

}  // namespace onset::model
