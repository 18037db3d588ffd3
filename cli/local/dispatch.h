// Running the command the user gave: what it needs first (cli/commands/command.h: Needs), then
// the command. A command that needs nothing gets SIGINT/SIGTERM handling (the first asks it to
// stop, the second exits at once); the others get the coordinator the flags, the environment and
// the data directory (DataDir) name, or that directory's database read here (cli/local/connect.h).
#pragma once

#include <ostream>
#include <string>

#include "cli/commands/command.h"

namespace onset::cli {

// Returns the command's exit code, or 1 (cli/exit_codes.h) when what it needs cannot be had.
int Dispatch(const Command& command, const GlobalFlags& flags, const std::string& program,
             std::ostream& out, std::ostream& err);

}  // namespace onset::cli
