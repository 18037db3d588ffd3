// Whole-file reads and crash-safe whole-file writes with plain POSIX calls (libtorch.so exports
// its own copies of some std::filesystem symbols, so the trainer avoids std::filesystem). Every
// program writes its files that must never be seen half-written (checkpoints, exports, address
// and token files) through WriteFileDurably.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>

namespace onset::base {

// mkdir -p. Throws std::runtime_error naming the directory that could not be created.
void MakeDirs(const std::string& dir);

// What a durable write does with a file already at its path.
enum class IfExists {
  kReplace,  // the new bytes replace it (rename)
  kKeep,     // it stays and the new bytes are dropped (link): of writers racing to create the
             // file, the first wins and every one of them then reads the same bytes
};

struct DurableWriteOptions {
  // The new file's permission bits, exactly (fchmod: the umask does not narrow them), e.g. 0600
  // for a secret. Unset: 0644 less the umask.
  std::optional<mode_t> mode;
  IfExists if_exists = IfExists::kReplace;
};

// `path`.tmp-PID-HEX: a temporary name beside `path` that no other writer uses, whether it runs
// in this process, another one here, or on another machine sharing the directory (PID with a
// random 64-bit number). Its prefix is always `path` + kTempInfix.
inline constexpr char kTempInfix[] = ".tmp";
std::string UniqueTempName(const std::string& path);

// Writes `bytes` to `path` atomically: to a temporary file of its own beside it
// (UniqueTempName, created with O_EXCL, so racing writers never share or truncate one), fsync,
// rename (kKeep: link), fsync of the directory. A crash leaves either the old file or the new
// one (plus perhaps a stray temporary file, which later writes leave alone). Returns nullopt, or
// "TMPFILE: what: strerror" naming the file and what failed; the temporary file is removed then.
std::optional<std::string> TryWriteFileDurably(const std::string& path, std::string_view bytes,
                                               const DurableWriteOptions& options = {});

// TryWriteFileDurably, throwing std::runtime_error with its message on errors.
void WriteFileDurably(const std::string& path, std::string_view bytes,
                      const DurableWriteOptions& options = {});

// Reads the whole file into *out. Returns "PATH: what: strerror" on errors.
std::optional<std::string> ReadFile(const std::string& path, std::string* out);

}  // namespace onset::base
