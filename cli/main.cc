// onset: submit studies, watch them, read results, or run one on this machine. main only builds
// the command line from the commands' own parts (cli/commands/, cli/local/) and hands the one
// given to Dispatch.
#include <iostream>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>

#include "cli/commands/access_commands.h"
#include "cli/commands/analysis_commands.h"
#include "cli/commands/artifacts_command.h"
#include "cli/commands/backup_command.h"
#include "cli/commands/cell_commands.h"
#include "cli/commands/command.h"
#include "cli/commands/export_model_command.h"
#include "cli/commands/follow_commands.h"
#include "cli/commands/slurm_command.h"
#include "cli/commands/study_commands.h"
#include "cli/exit_codes.h"
#include "cli/local/dispatch.h"
#include "cli/local/local_commands.h"

int main(int argc, char** argv) {
  spdlog::set_default_logger(spdlog::stderr_color_mt("onset"));
  spdlog::set_level(spdlog::level::warn);

  CLI::App app{"onset: scaling studies of hybrid attention language models"};
  app.require_subcommand(1);
  app.fallthrough();  // the global flags may follow the subcommand too
  onset::cli::GlobalFlags flags;
  onset::cli::AddGlobalFlags(app, flags);
  // In the order `onset --help` lists them.
  onset::cli::CommandTable commands;
  onset::cli::AddStudyCommands(app, commands);              // submit, status
  onset::cli::AddCellCommands(app, commands);               // cancel, rerun
  onset::cli::AddFollowCommands(app, commands);             // watch, logs
  onset::cli::AddAnalysisCommands(app, commands);           // compare, plot, fit, heads, export
  onset::cli::AddExportModelCommand(app, commands);         // export-model
  onset::cli::AddArtifactsCommand(app, commands);           // artifacts
  onset::cli::AddBackupCommand(app, commands);              // backup
  onset::cli::AddWorkersAndResultsCommands(app, commands);  // workers, results
  onset::cli::AddAccessCommands(app, commands);             // token, audit
  onset::cli::AddRunCommand(app, commands);
  onset::cli::AddSlurmCommands(app, commands);  // slurm up
  onset::cli::AddDashboardCommand(app, commands);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and the like exit 0; every usage error is "bad input".
    return app.exit(e) == 0 ? onset::cli::kExitOk : onset::cli::kExitBadInput;
  }
  const onset::cli::Command* command = onset::cli::ParsedCommand(commands);
  if (command == nullptr) return onset::cli::kExitBadInput;  // require_subcommand prevents it
  return onset::cli::Dispatch(*command, flags, argv[0], std::cout, std::cerr);
}
