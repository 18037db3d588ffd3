// The commands that run a study's machinery in this process and need no coordinator: `onset run`
// (an embedded coordinator and workers, cli/local/run_command.h) and `onset dashboard` (a
// read-only server over the data directory, cli/local/dashboard_command.h).
#pragma once

#include "cli/commands/command.h"

namespace onset::cli {

// Adds run to `app`.
void AddRunCommand(CLI::App& app, CommandTable& table);
// Adds dashboard to `app`.
void AddDashboardCommand(CLI::App& app, CommandTable& table);

}  // namespace onset::cli
