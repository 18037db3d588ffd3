// The CLI's live commands: `onset watch` (a study's state changes and progress as they happen)
// and `onset logs` (a cell's trainer log, optionally followed). Both ride out a coordinator
// restart: they reconnect with backoff and resume where they stopped (the watch after the last
// event it saw, the log after the last line), for up to `reconnect_for_ms`.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

#include "cli/client/study_client.h"
#include "cli/commands/command.h"
#include "cli/views/style.h"

namespace onset::cli {

struct WatchOptions {
  std::string study;
  bool follow = false;  // keep watching after every cell has ended (for cells added later)
  bool json = false;    // one JSON object per message (JSON lines) instead of text
  int64_t reconnect_for_ms = 10 * 60'000;
  Style style;
  // On a terminal: a bar per running cell, redrawn in place under the event lines (columns).
  bool progress_bars = false;
  int width = 100;
};

// Exit codes (cli/exit_codes.h): 0 when the study ended with every cell succeeded or diverged,
// 3 when some failed or were cancelled, 1 when the coordinator stayed unreachable or the study
// is unknown.
int WatchCommand(StudyClient& client, const WatchOptions& options, std::ostream& out,
                 std::ostream& err);

struct LogsOptions {
  std::string study;    // empty: the cell is looked up in every study
  std::string cell;     // id or a unique prefix
  int attempt = 0;      // 0: the latest
  int tail = 0;         // only the last N lines (0: all that are kept)
  bool follow = false;  // keep printing lines as they come, and the cell's next attempts
  bool json = false;    // one JSON object per line
  int64_t reconnect_for_ms = 10 * 60'000;
  Style style;
};

// Lines go to `out`, headers ("== study/cell attempt 2 on w-... ==") and notes to `err`.
int LogsCommand(StudyClient& client, const LogsOptions& options, std::ostream& out,
                std::ostream& err);

// Adds watch and logs to `app`.
void AddFollowCommands(CLI::App& app, CommandTable& table);

}  // namespace onset::cli
