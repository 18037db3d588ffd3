// The CLI's subcommands that talk to a running coordinator. Each returns the process's exit code
// (cli/exit_codes.h): 0 success, 1 failure (unreachable coordinator, unknown study, ...), 2 bad
// input (a bad study file, or one that would change the stored cells of its study).
#pragma once

#include <ostream>
#include <string>

#include "cli/client/study_client.h"
#include "cli/commands/command.h"
#include "cli/views/cost_view.h"
#include "cli/views/style.h"

namespace onset::cli {

// `onset submit [--dry-run] FILE [--json]`. A dry run asks the coordinator what the submission
// would do (it knows which cells exist and enforces the append-only rule) and prints every cell
// as new or existing, then what the new ones cost to train (cli/views/cost_view.h, device-hours
// at `throughput` when one is stated), writing nothing. With --json the cost is the "cost" key
// beside the response's own.
int SubmitCommand(StudyClient& client, const std::string& file, bool dry_run, bool json,
                  std::ostream& out, std::ostream& err, const Throughput& throughput = {});
// `onset status [STUDY] [--json]`; an empty `study` lists every study (with `tag`, those that
// carry it). `states` and `where` (comma-separated, as `--state` and `--where` take them) filter
// the cells of one study; the summary above the table still counts them all.
int StatusCommand(StudyClient& client, const std::string& study, bool json, std::ostream& out,
                  std::ostream& err, const std::string& states = "", const std::string& where = "",
                  const Style& style = Style(), const std::string& tag = "");
// `onset workers [--all]`: the live workers (every one the coordinator keeps with `all`), their
// jobs and heartbeat age.
int WorkersCommand(StudyClient& client, bool json, std::ostream& out, std::ostream& err,
                   bool all = false);
// `onset results STUDY [--json]`.
int ResultsCommand(StudyClient& client, const std::string& study, bool json, std::ostream& out,
                   std::ostream& err);

// The absolute directory holding `path` (a study file): where its relative data paths point.
std::string StudyBaseDir(const std::string& path);

// Adds submit, check and status to `app`; then workers and results. `onset check FILE` is
// `onset submit --dry-run FILE` against the coordinator's own services over an empty database in
// this process (Needs::kScratch), planned as a coordinator with shared checkpoints plans it: no
// coordinator needed, every cell new.
void AddStudyCommands(CLI::App& app, CommandTable& table);
void AddWorkersAndResultsCommands(CLI::App& app, CommandTable& table);

}  // namespace onset::cli
