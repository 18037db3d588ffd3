// Colour for people at a terminal, nothing for pipes and files: states, alerts and dim
// details are wrapped in ANSI SGR sequences only when the output is a terminal, NO_COLOR is
// unset (https://no-color.org) and TERM is not "dumb".
#pragma once

#include <string>

#include "onset/v1/onset.pb.h"

namespace onset::cli {

struct Style {
  bool color = false;

  // Colour for the stream with descriptor `fd` (1 for stdout), as the environment allows.
  static Style ForDescriptor(int fd);

  // The state's name (proto/cell_names.h) coloured by what it means: green succeeded, red
  // failed, yellow backoff and cancelled, cyan running, magenta diverged; queued stays plain.
  std::string State(v1::CellState state) const;
  std::string Alert(const std::string& text) const;  // bold red
  std::string Dim(const std::string& text) const;

 private:
  std::string Wrap(const char* sgr, const std::string& text) const;
};

// The width `text` takes on a terminal: its length without ANSI escape sequences.
size_t VisibleWidth(const std::string& text);

}  // namespace onset::cli
