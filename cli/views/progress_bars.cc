#include "cli/views/progress_bars.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "cli/views/render.h"
#include "cli/views/watch_view.h"

namespace onset::cli {

std::string ProgressBars(const v1::GetStudyResponse& study, int width) {
  std::string out;
  width = std::max(width, 60);
  for (const v1::Cell& c : study.cells()) {
    if (c.state() != v1::CELL_STATE_RUNNING && c.state() != v1::CELL_STATE_BACKOFF) continue;
    const double fraction =
        c.tokens_budget() > 0
            ? std::clamp(static_cast<double>(c.tokens_done()) / c.tokens_budget(), 0.0, 1.0)
            : 0.0;
    std::string tail =
        absl::StrCat(" ", static_cast<int>(fraction * 100), "% ", FormatTokens(c.tokens_done()),
                     "/", FormatTokens(c.tokens_budget()));
    if (c.state() == v1::CELL_STATE_BACKOFF) {
      absl::StrAppend(&tail, " waiting to retry");
    } else if (c.tokens_per_second() > 0) {
      absl::StrAppend(
          &tail, " ", FormatTokens(static_cast<int64_t>(c.tokens_per_second())), " tok/s ETA ",
          FormatDuration((c.tokens_budget() - c.tokens_done()) / c.tokens_per_second()));
    }
    std::string label = c.id().substr(0, 8) + " " + DescribeAxes(c.axes());
    const int bar = 20;
    // A fixed share for the numbers, so that the bars of all cells line up.
    constexpr int kTail = 36;
    const size_t room = static_cast<size_t>(std::max(10, width - bar - 3 - kTail));
    if (label.size() > room) label = label.substr(0, room - 1) + "~";
    label.resize(room, ' ');
    const int filled = static_cast<int>(fraction * bar + 0.5);
    absl::StrAppend(&out, label, " [", std::string(filled, '#'), std::string(bar - filled, '.'),
                    "]", tail, "\n");
  }
  const std::string progress = StudyProgress(study);
  if (!progress.empty()) absl::StrAppend(&out, study.study().name(), ": ", progress, "\n");
  return out;
}

std::string LiveBlock::Erase() {
  if (lines_ == 0) return "";
  return absl::StrCat("\x1b[", lines_, "A\x1b[J");  // up over the block, clear to the end
}

std::string LiveBlock::Redraw(const std::string& block) {
  std::string out = Erase() + block;
  lines_ = static_cast<int>(std::count(block.begin(), block.end(), '\n'));
  return out;
}

std::string LiveBlock::Above(const std::string& lines) {
  std::string out = Erase() + lines;
  lines_ = 0;
  return out;
}

std::string LiveBlock::Clear() {
  std::string out = Erase();
  lines_ = 0;
  return out;
}

int TerminalWidth(int fd) {
  if (const char* columns = std::getenv("COLUMNS")) {
    const int n = std::atoi(columns);
    if (n > 0) return n;
  }
  winsize ws{};
  if (ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
  return 100;
}

}  // namespace onset::cli
