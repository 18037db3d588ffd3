// UTF-8 for text that comes from other processes (a trainer's stderr, its metric names): such
// bytes must be made valid before they reach a protobuf `string` field, whose parser refuses
// the whole message otherwise, and cut only between characters.
//
// Valid means what protobuf accepts: well-formed UTF-8 of code points up to U+10FFFF, with no
// overlong forms and no surrogates (U+D800..U+DFFF).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace onset::common {

// The replacement character U+FFFD, as UTF-8.
inline constexpr std::string_view kReplacementChar = "\xEF\xBF\xBD";

bool IsValidUtf8(std::string_view text);

// `text` with every ill-formed sequence replaced by one U+FFFD (per maximal ill-formed subpart,
// as Unicode recommends); valid text comes back unchanged.
std::string SanitizeUtf8(std::string_view text);

// The length of the longest prefix of `text` of at most `max_bytes` bytes that does not end
// inside a multi-byte character (for valid UTF-8 input: a prefix that is itself valid).
size_t Utf8PrefixLength(std::string_view text, size_t max_bytes);

// The first bytes of `text`, at most `max_bytes`, cut on a character boundary.
inline std::string_view TruncateUtf8(std::string_view text, size_t max_bytes) {
  return text.substr(0, Utf8PrefixLength(text, max_bytes));
}

// The last bytes of `text`, at most `max_bytes`, starting on a character boundary (continuation
// bytes at the cut are left out).
std::string_view TailUtf8(std::string_view text, size_t max_bytes);

}  // namespace onset::common
