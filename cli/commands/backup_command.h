// `onset backup --out FILE`: a consistent copy of the coordinator's database, taken while it
// serves (the Backup call; db/online_backup.h), written to FILE through a temporary file beside
// it that must pass PRAGMA quick_check before it is renamed into place. `onsetd --db FILE`
// serves the copy as it is (docs/operating-onsetd.md, "Backup and restore").
//
// Exit codes as every command: 0 written; 1 the copy could not be taken, sent or written;
// 2 bad input.
#pragma once

#include <ostream>
#include <string>

#include "cli/client/study_client.h"
#include "cli/commands/command.h"

namespace onset::cli {

int BackupCommand(StudyClient& client, const std::string& out_path, std::ostream& out,
                  std::ostream& err);

// Adds backup to `app`.
void AddBackupCommand(CLI::App& app, CommandTable& table);

}  // namespace onset::cli
