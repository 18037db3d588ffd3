#include "cli/views/style.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "proto/cell_names.h"

namespace onset::cli {

Style Style::ForDescriptor(int fd) {
  const char* no_color = std::getenv("NO_COLOR");
  const char* term = std::getenv("TERM");
  Style style;
  style.color = isatty(fd) == 1 && (no_color == nullptr || no_color[0] == '\0') &&
                !(term != nullptr && std::strcmp(term, "dumb") == 0);
  return style;
}

std::string Style::Wrap(const char* sgr, const std::string& text) const {
  if (!color || text.empty()) return text;
  return std::string("\x1b[") + sgr + "m" + text + "\x1b[0m";
}

std::string Style::State(v1::CellState state) const {
  const std::string name(wire::StateName(state));
  switch (state) {
    case v1::CELL_STATE_SUCCEEDED:
      return Wrap("32", name);
    case v1::CELL_STATE_FAILED:
      return Wrap("31", name);
    case v1::CELL_STATE_BACKOFF:
    case v1::CELL_STATE_CANCELLED:
      return Wrap("33", name);
    case v1::CELL_STATE_RUNNING:
      return Wrap("36", name);
    case v1::CELL_STATE_DIVERGED:
      return Wrap("35", name);
    default:
      return name;
  }
}

std::string Style::Alert(const std::string& text) const { return Wrap("1;31", text); }

std::string Style::Dim(const std::string& text) const { return Wrap("2", text); }

size_t VisibleWidth(const std::string& text) {
  size_t width = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\x1b' && i + 1 < text.size() && text[i + 1] == '[') {
      i += 2;
      while (i < text.size() && !(text[i] >= '@' && text[i] <= '~')) ++i;  // to the final byte
      continue;
    }
    // Count UTF-8 code points, not bytes (continuation bytes are 10xxxxxx).
    if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) ++width;
  }
  return width;
}

}  // namespace onset::cli
