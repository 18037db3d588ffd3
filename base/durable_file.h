// Whole-file reads and crash-safe whole-file writes with plain POSIX calls (libtorch.so exports
// its own copies of some std::filesystem symbols, so the trainer avoids std::filesystem).
#pragma once

#include <optional>
#include <string>

namespace onset::base {

// mkdir -p. Throws std::runtime_error naming the directory that could not be created.
void MakeDirs(const std::string& dir);

// Writes `bytes` to `path` atomically: to `path`.tmp, fsync, rename, fsync of the directory.
// A crash leaves either the old file or the new one (plus perhaps a stray .tmp). Throws
// std::runtime_error naming the file on I/O errors; the .tmp is removed then.
void WriteFileDurably(const std::string& path, const std::string& bytes);

// Reads the whole file into *out. Returns "PATH: what: strerror" on errors.
std::optional<std::string> ReadFile(const std::string& path, std::string* out);

}  // namespace onset::base
