// A trainer's stderr line as the worker relays it and the coordinator keeps it: valid UTF-8 of
// at most kMaxLogLineBytes bytes. Both ends apply the same bound, the worker as it reads the
// line (so a huge line is never held whole nor sent) and the coordinator before storing it.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace onset::common {

// The longest line kept, in bytes of UTF-8, the cut marker included.
inline constexpr size_t kMaxLogLineBytes = 8 * 1024;

// `text` made valid UTF-8 (common/utf8.h) and, when it is longer than `max_bytes` or is only the
// first bytes of a longer line (`full_bytes`: the length of the whole line as written, at least
// text.size()), cut on a character boundary and ended with the marker
// " [... cut: the line had N bytes]", all within `max_bytes`.
std::string BoundLogLine(std::string_view text, size_t full_bytes,
                         size_t max_bytes = kMaxLogLineBytes);
inline std::string BoundLogLine(std::string_view text) { return BoundLogLine(text, text.size()); }

}  // namespace onset::common
