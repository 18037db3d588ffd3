// `onset backup --out FILE`: a consistent copy of the coordinator's database, taken while it
// serves (the Backup call streams it from one read transaction), written to FILE by a
// db::BackupFileWriter: through a temporary file beside it, stamped as a backup, checked with
// PRAGMA quick_check and only then renamed into place. FILE is never the database the
// coordinator serves nor any file it holds (the coordinator names them), and never anything but
// an earlier backup (db/backup_destination.h). `onsetd --db FILE` serves the copy as a restore
// (docs/operating-onsetd.md, "Backup and restore").
//
// Exit codes as every command: 0 written; 1 the copy could not be taken, sent or written (the
// coordinator busy with another backup, the disk without room for it and its reserve); 2 bad
// input (FILE may not receive a backup).
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

#include "cli/client/study_client.h"
#include "cli/commands/command.h"

namespace onset::cli {

struct BackupOptions {
  std::string out;
  int64_t reserve_bytes = 0;  // left free on FILE's disk (db::kDefaultBackupReserveBytes)
};

int BackupCommand(StudyClient& client, const BackupOptions& options, std::ostream& out,
                  std::ostream& err);

// Adds backup to `app`.
void AddBackupCommand(CLI::App& app, CommandTable& table);

}  // namespace onset::cli
