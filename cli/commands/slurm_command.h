// `onset slurm up STUDY`: submits one Slurm array of worker jobs (deploy/slurm/onset-worker.sbatch)
// sized to the study's queued cells, the workers reaching the coordinator the way this CLI did.
#pragma once

#include <chrono>
#include <ostream>

#include "cli/client/study_client.h"
#include "cli/commands/command.h"
#include "cli/commands/slurm_up.h"

namespace onset::cli {

// Reads the study's cells, plans the array (cli/commands/slurm_up.h) and runs sbatch, or with
// options.dry_run prints what it would run. Prints "study X has no queued cells: no workers
// submitted" and runs nothing when none is queued. Returns the exit code (cli/exit_codes.h): 1
// for an unknown study, an unreachable coordinator, no job script, or an sbatch that cannot be
// run, fails (its stderr is printed), prints no job id or runs past `sbatch_timeout`.
int SlurmUpCommand(StudyClient& client, const SlurmUpOptions& options, const WorkerAccess& access,
                   std::ostream& out, std::ostream& err,
                   std::chrono::milliseconds sbatch_timeout = std::chrono::seconds(60));

// Adds slurm (and its one subcommand, up) to `app`.
void AddSlurmCommands(CLI::App& app, CommandTable& table);

}  // namespace onset::cli
