#include "cli/commands/command.h"

#include <google/protobuf/util/json_util.h>

#include <filesystem>
#include <system_error>

#include <CLI/CLI.hpp>

#include "cli/client/address.h"

namespace onset::cli {

void AddGlobalFlags(CLI::App& app, GlobalFlags& flags) {
  app.add_option("--coordinator", flags.coordinator,
                 "coordinator host:port (else $ONSET_COORDINATOR, else the address of a running "
                 "`onset run` in the data directory, else its onset.db read-only for the commands "
                 "that only read, else 127.0.0.1:7070)");
  app.add_option("--token-file", flags.token_file,
                 "file holding the coordinator's token (else $ONSET_TOKEN, else the file named by "
                 "$ONSET_TOKEN_FILE, else that of a running `onset run` in the data directory)");
  app.add_option("--tls-ca", flags.tls_ca,
                 "connect with TLS, trusting the PEM certificates in this file (env ONSET_TLS_CA)");
  app.add_option("--data-dir", flags.data_dir,
                 "the data directory of `onset run`: where it keeps onset.db, its token and its "
                 "address while it runs, and where the other commands look for them (else "
                 "$ONSET_DATA_DIR, else ./onset-data)");
}

std::string DataDir(const GlobalFlags& flags, const char* env) {
  if (!flags.data_dir.empty()) return flags.data_dir;
  if (env != nullptr && *env != '\0') return env;
  return kDefaultDataDir;
}

const Command* ParsedCommand(const CommandTable& table) {
  for (const Command& command : table) {
    if (command.app->parsed()) return &command;
  }
  return nullptr;
}

std::string ProgramNextToSelf(const std::string& program) {
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? program : (self.parent_path() / program).string();
}

int ReportError(const absl::Status& status, std::ostream& err) {
  err << status.message() << "\n";
  const bool bad_input = status.code() == absl::StatusCode::kInvalidArgument ||
                         status.code() == absl::StatusCode::kFailedPrecondition;
  return bad_input ? 2 : 1;
}

std::string ToJson(const google::protobuf::Message& message) {
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  options.always_print_primitive_fields = true;
  options.preserve_proto_field_names = true;
  std::string json;
  if (!google::protobuf::util::MessageToJsonString(message, &json, options).ok()) return "{}\n";
  return json;
}

}  // namespace onset::cli
