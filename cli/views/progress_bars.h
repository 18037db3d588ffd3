// Progress on a terminal: one bar per running cell (tokens / budget, tokens/s, ETA) under a
// study line, redrawn in place as it changes. Off a terminal the callers print plain lines
// instead (onset watch's events, onset run's progress line).
#pragma once

#include <string>

#include "onset/v1/onset.pb.h"

namespace onset::cli {

// The block for `study`: its running (and backing-off) cells' bars, then the study's progress
// line; each line ends in '\n' and fits `width` columns.
std::string ProgressBars(const v1::GetStudyResponse& study, int width);

// Keeps track of the block last drawn, so that what is printed next replaces it: Redraw returns
// the escape sequence that moves up over the old block and clears it, then the new one; Above
// returns the same erase followed by `lines` (which then stay), and the block is redrawn by the
// next Redraw.
class LiveBlock {
 public:
  std::string Redraw(const std::string& block);
  std::string Above(const std::string& lines);
  // Erases the block and forgets it (at the end, before the summary).
  std::string Clear();

 private:
  std::string Erase();
  int lines_ = 0;  // lines of the block on screen now
};

// The terminal's width in columns (COLUMNS, then the tty's), 100 when unknown.
int TerminalWidth(int fd);

}  // namespace onset::cli
