#include "common/log_line.h"

#include <algorithm>

#include "common/utf8.h"

namespace onset::common {

std::string BoundLogLine(std::string_view text, size_t full_bytes, size_t max_bytes) {
  std::string line = SanitizeUtf8(text);
  if (line.size() <= max_bytes && full_bytes <= text.size()) return line;
  const std::string marker =
      " [... cut: the line had " + std::to_string(std::max(full_bytes, text.size())) + " bytes]";
  const size_t room = max_bytes > marker.size() ? max_bytes - marker.size() : 0;
  line.resize(Utf8PrefixLength(line, room));
  line += marker;
  if (line.size() > max_bytes) line.resize(Utf8PrefixLength(line, max_bytes));
  return line;
}

}  // namespace onset::common
