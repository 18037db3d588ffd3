#include "cli/commands/backup_command.h"

#include <memory>
#include <optional>

#include <CLI/CLI.hpp>

#include "base/posix_io.h"
#include "cli/exit_codes.h"
#include "db/backup_file.h"

namespace onset::cli {
namespace {

// The files the coordinator holds, as its first chunk names them: they are files of this
// machine only when the coordinator runs here.
std::vector<db::FileIdentity> HeldHere(const v1::BackupChunk& first) {
  std::vector<db::FileIdentity> held;
  if (first.host().empty() || first.host() != base::HostName("")) return held;
  for (const v1::HeldFile& f : first.held_files()) {
    held.push_back({f.device(), f.inode(), f.what()});
  }
  return held;
}

}  // namespace

int BackupCommand(StudyClient& client, const BackupOptions& options, std::ostream& out,
                  std::ostream& err) {
  if (options.out.empty()) {
    err << "--out: name the file to write\n";
    return kExitBadInput;
  }
  // What can be told here is told before the coordinator starts a copy.
  if (absl::Status s = db::CheckBackupDestination(options.out, {}); !s.ok()) {
    err << s.message() << "\n";
    return kExitBadInput;
  }
  std::unique_ptr<db::BackupFileWriter> writer;
  db::BackupStamp stamp;
  bool local_error = false;
  absl::Status status = client.Backup([&](const v1::BackupChunk& chunk) -> absl::Status {
    if (!writer) {
      db::BackupFileOptions file_options;
      file_options.held = HeldHere(chunk);
      file_options.reserve_bytes = options.reserve_bytes;
      absl::StatusOr<std::unique_ptr<db::BackupFileWriter>> created =
          db::BackupFileWriter::Create(options.out, std::move(file_options));
      if (!created.ok()) {
        local_error = true;
        return created.status();
      }
      writer = std::move(*created);
      stamp = db::BackupStamp{chunk.taken_unix_ms(), chunk.source()};
      if (absl::Status s = writer->Start({chunk.total_bytes(), 0}); !s.ok()) {
        local_error = true;
        return s;
      }
    }
    absl::Status written = writer->Piece(chunk.offset(), chunk.data());
    local_error = !written.ok();
    return written;
  });
  if (!status.ok()) {
    if (local_error && absl::IsFailedPrecondition(status)) {
      err << status.message() << "\n";
      return kExitBadInput;
    }
    err << status.message() << "; nothing was written to " << options.out << "\n";
    return kExitFailure;
  }
  if (!writer) {
    err << "Backup: the coordinator sent no copy; nothing was written to " << options.out << "\n";
    return kExitFailure;
  }
  absl::StatusOr<int64_t> size = writer->Finish(stamp);
  if (!size.ok()) {
    err << size.status().message() << "\n";
    return absl::IsFailedPrecondition(size.status()) ? kExitBadInput : kExitFailure;
  }
  out << "backup -> " << options.out << " (" << *size
      << " bytes, PRAGMA quick_check ok, stamped as a backup: onsetd --db " << options.out
      << " serves it as a restore; docs/operating-onsetd.md says how)\n";
  return kExitOk;
}

void AddBackupCommand(CLI::App& app, CommandTable& table) {
  auto options = std::make_shared<BackupOptions>();
  options->reserve_bytes = db::kDefaultBackupReserveBytes;
  CLI::App* sub = app.add_subcommand(
      "backup",
      "a consistent copy of the coordinator's database, taken while it serves, stamped as a "
      "backup: onsetd --db serves it as a restore");
  sub->add_option("--out", options->out,
                  "the file to write: a new file or an earlier backup, never a database in use")
      ->required();
  sub->add_option("--reserve", options->reserve_bytes,
                  "free space to leave on --out's disk: the copy does not start, or stops, "
                  "rather than leave less (e.g. 512M, 2G)")
      ->transform(CLI::AsSizeValue(/*kb_is_1000=*/false))
      ->capture_default_str();
  table.push_back({sub, Needs::kReader, "", "", [options](const CommandContext& c) {
                     return BackupCommand(*c.client, *options, *c.out, *c.err);
                   }});
}

}  // namespace onset::cli
