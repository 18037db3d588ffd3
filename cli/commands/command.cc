#include "cli/commands/command.h"

#include <google/protobuf/util/json_util.h>

#include <CLI/CLI.hpp>

namespace onset::cli {

void AddGlobalFlags(CLI::App& app, GlobalFlags& flags) {
  app.add_option("--coordinator", flags.coordinator,
                 "coordinator host:port (else $ONSET_COORDINATOR, else the address of a running "
                 "`onset run` in ./onset-data, else its onset.db read-only for the commands that "
                 "only read, else 127.0.0.1:7070)");
  app.add_option("--token-file", flags.token_file,
                 "file holding the coordinator's token (else $ONSET_TOKEN, else the file named by "
                 "$ONSET_TOKEN_FILE, else that of a running `onset run` in ./onset-data)");
  app.add_option("--tls-ca", flags.tls_ca,
                 "connect with TLS, trusting the PEM certificates in this file (env ONSET_TLS_CA)");
}

const Command* ParsedCommand(const CommandTable& table) {
  for (const Command& command : table) {
    if (command.app->parsed()) return &command;
  }
  return nullptr;
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
