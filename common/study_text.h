// The bytes of a study file, before any YAML: how large one may be, that it is UTF-8 text, and
// reading one from disk without trusting what the path names (a directory, /dev/zero, a FIFO).
// Shared by the CLI, which checks a file before sending it, and the coordinator's parser, which
// checks whatever it is sent.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace onset::common {

// The largest study file, in bytes (1 MiB: real ones are a few KiB).
inline constexpr size_t kMaxStudyFileBytes = size_t{1} << 20;

// OK when `text` is at most kMaxStudyFileBytes of UTF-8 without NUL bytes; else
// InvalidArgument "SOURCE:LINE: problem" with the byte offset, e.g.
// "s.yaml:2: the file is not UTF-8 text (byte 0xe9 at offset 24)".
absl::Status CheckStudyText(const std::string& source, std::string_view text);

// The offset of the first byte of `text` that does not continue valid UTF-8 (overlong forms,
// surrogates and code points above U+10FFFF are invalid), or npos when all of it is valid.
size_t FirstInvalidUtf8(std::string_view text);

// Reads a study file, at most kMaxStudyFileBytes of it, and checks it (CheckStudyText).
// NotFound or PermissionDenied (or Internal for another read error) when it cannot be read:
// "cannot open PATH: No such file or directory"; InvalidArgument for something that is not a
// study file: a directory, a file over the limit (a device such as /dev/zero is read only up to
// it), not UTF-8 text.
absl::StatusOr<std::string> ReadStudyFile(const std::string& path);

}  // namespace onset::common
