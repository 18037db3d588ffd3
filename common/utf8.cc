#include "common/utf8.h"

namespace onset::common {
namespace {

// The length of the well-formed character starting at text[i], or 0 when the bytes there are
// ill-formed; then *bad is the length of the maximal ill-formed subpart (at least 1), which
// Unicode replaces by a single U+FFFD.
size_t CharLength(std::string_view text, size_t i, size_t* bad) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char b0 = byte(i);
  *bad = 1;
  if (b0 < 0x80) return 1;
  size_t need;
  unsigned char lo = 0x80, hi = 0xBF;  // the range of the second byte
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    need = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    need = 3;
    if (b0 == 0xE0) lo = 0xA0;  // no overlong forms
    if (b0 == 0xED) hi = 0x9F;  // no surrogates
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    need = 4;
    if (b0 == 0xF0) lo = 0x90;  // no overlong forms
    if (b0 == 0xF4) hi = 0x8F;  // nothing above U+10FFFF
  } else {
    return 0;  // a continuation byte, C0, C1 or F5..FF: never valid here
  }
  for (size_t k = 1; k < need; ++k) {
    if (i + k >= text.size()) {
      *bad = k;
      return 0;
    }
    const unsigned char b = byte(i + k);
    const unsigned char min = k == 1 ? lo : 0x80;
    const unsigned char max = k == 1 ? hi : 0xBF;
    if (b < min || b > max) {
      *bad = k;
      return 0;
    }
  }
  return need;
}

}  // namespace

bool IsValidUtf8(std::string_view text) {
  for (size_t i = 0; i < text.size();) {
    size_t bad;
    const size_t n = CharLength(text, i, &bad);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string SanitizeUtf8(std::string_view text) {
  if (IsValidUtf8(text)) return std::string(text);
  std::string out;
  out.reserve(text.size() + 16);
  for (size_t i = 0; i < text.size();) {
    size_t bad;
    const size_t n = CharLength(text, i, &bad);
    if (n == 0) {
      out += kReplacementChar;
      i += bad;
    } else {
      out.append(text, i, n);
      i += n;
    }
  }
  return out;
}

size_t Utf8PrefixLength(std::string_view text, size_t max_bytes) {
  if (text.size() <= max_bytes) return text.size();
  // The character that straddles the cut starts at most 3 bytes before it, on a byte that is
  // not a continuation byte (10xxxxxx); cut before it when its lead byte says it is longer
  // than what is left of it before the cut.
  size_t start = max_bytes;
  for (int k = 0; k < 3 && start > 0; ++k) {
    if ((static_cast<unsigned char>(text[start]) & 0xC0) != 0x80) break;
    --start;
  }
  const unsigned char lead = static_cast<unsigned char>(text[start]);
  const size_t length = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
  return start + length > max_bytes ? start : max_bytes;
}

std::string_view TailUtf8(std::string_view text, size_t max_bytes) {
  if (text.size() <= max_bytes) return text;
  size_t from = text.size() - max_bytes;
  while (from < text.size() && (static_cast<unsigned char>(text[from]) & 0xC0) == 0x80) ++from;
  return text.substr(from);
}

}  // namespace onset::common
