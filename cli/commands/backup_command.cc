#include "cli/commands/backup_command.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>

#include <CLI/CLI.hpp>

#include "cli/exit_codes.h"
#include "db/online_backup.h"

namespace onset::cli {

namespace fs = std::filesystem;

int BackupCommand(StudyClient& client, const std::string& out_path, std::ostream& out,
                  std::ostream& err) {
  if (out_path.empty()) {
    err << "--out: name the file to write\n";
    return kExitBadInput;
  }
  std::error_code ec;
  if (fs::is_directory(out_path, ec)) {
    err << "--out: " << out_path << " is a directory: name a file\n";
    return kExitBadInput;
  }
  const std::string partial = out_path + ".partial-" + std::to_string(::getpid());
  std::FILE* file = std::fopen(partial.c_str(), "wb");
  if (file == nullptr) {
    err << "cannot write " << partial << ": " << std::strerror(errno) << "\n";
    return kExitFailure;
  }
  bool write_failed = false;
  absl::StatusOr<int64_t> size = client.Backup([&](std::string_view data) {
    if (std::fwrite(data.data(), 1, data.size(), file) != data.size()) write_failed = true;
    return !write_failed;
  });
  const bool synced = std::fflush(file) == 0 && ::fsync(::fileno(file)) == 0;
  std::fclose(file);
  auto discard = [&] { fs::remove(partial, ec); };
  if (write_failed || !synced) {
    err << "cannot write " << partial << ": " << std::strerror(errno) << "\n";
    discard();
    return kExitFailure;
  }
  if (!size.ok()) {
    discard();
    return ReportError(size.status(), err);
  }
  if (absl::Status check = db::QuickCheckFile(partial); !check.ok()) {
    err << "the copy received: " << check.message() << "; nothing was written to " << out_path
        << "\n";
    discard();
    return kExitFailure;
  }
  fs::rename(partial, out_path, ec);
  if (ec) {
    err << "cannot rename " << partial << " to " << out_path << ": " << ec.message() << "\n";
    discard();
    return kExitFailure;
  }
  out << "backup -> " << out_path << " (" << *size
      << " bytes, PRAGMA quick_check ok; serve it with onsetd --db " << out_path << ")\n";
  return kExitOk;
}

void AddBackupCommand(CLI::App& app, CommandTable& table) {
  auto out_path = std::make_shared<std::string>();
  CLI::App* sub = app.add_subcommand(
      "backup",
      "a consistent copy of the coordinator's database, taken while it serves, which onsetd "
      "--db serves as it is");
  sub->add_option("--out", *out_path, "the file to write")->required();
  table.push_back({sub, Needs::kReader, "", "", [out_path](const CommandContext& c) {
                     return BackupCommand(*c.client, *out_path, *c.out, *c.err);
                   }});
}

}  // namespace onset::cli
