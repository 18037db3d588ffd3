// A subcommand of `onset`: the flags it adds to the command line and what runs when it is the one
// given. Each area of commands (study_commands.h, cell_commands.h, ...) adds its own with an
// Add...Commands function; main.cc lists those and hands the parsed one to cli/local/dispatch.h,
// which gives it what it needs (a connection, signal handling) and runs it.
#pragma once

#include <atomic>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "cli/client/study_client.h"
#include "common/auth_token.h"
#include "google/protobuf/message.h"

namespace CLI {
class App;
}  // namespace CLI

namespace onset::cli {

// The flags every command takes, before or after its name.
struct GlobalFlags {
  std::string coordinator;  // --coordinator
  std::string token_file;   // --token-file
  std::string tls_ca;       // --tls-ca
  std::string data_dir;     // --data-dir
};

// Adds the global flags to `app`, bound to `flags`.
void AddGlobalFlags(CLI::App& app, GlobalFlags& flags);

// The data directory of `onset run` that commands write to (run) or read (every other): first of
// --data-dir, $ONSET_DATA_DIR (`env`, may be null) when not empty, ./onset-data
// (kDefaultDataDir). The one place this order is decided; docs/running.md describes it.
std::string DataDir(const GlobalFlags& flags, const char* env);

// What a command needs before it can run.
enum class Needs {
  kNothing,      // runs on its own (onset run, onset dashboard); takes SIGINT/SIGTERM itself
  kReader,       // a coordinator, or the data directory's database read here
  kCoordinator,  // a coordinator: it changes studies or starts workers
  kScratch,      // the coordinator's services over an empty in-memory database (onset check)
};

// What a command runs with.
struct CommandContext {
  StudyClient* client = nullptr;  // set unless the command needs nothing
  const GlobalFlags* flags = nullptr;
  std::string data_dir;  // DataDir(*flags, $ONSET_DATA_DIR)
  // Where the token came from (--token-file, the environment, the data directory).
  common::TokenSources token_sources;
  // Set from the signal watcher once SIGINT or SIGTERM arrives (commands that need nothing).
  const std::atomic<bool>* interrupted = nullptr;
  std::string program;  // argv[0]
  std::ostream* out = nullptr;
  std::ostream* err = nullptr;
};

struct Command {
  CLI::App* app = nullptr;  // the subcommand; it ran when app->parsed()
  Needs needs = Needs::kReader;
  // For kCoordinator: the name in errors ("slurm up") and why it needs a coordinator.
  std::string name;
  std::string needs_why = "changes studies, which only a coordinator does";
  // Returns the process's exit code (cli/exit_codes.h).
  std::function<int(const CommandContext&)> run;
  // Said after the error when what the command needs cannot be had (e.g. a command that does
  // without); may be empty.
  std::string hint = {};
};

using CommandTable = std::vector<Command>;

// The command of `table` that was given on the command line; null when none was.
const Command* ParsedCommand(const CommandTable& table);

// Prints `status` for a person and returns its exit code (2 for InvalidArgument and
// FailedPrecondition, else 1).
int ReportError(const absl::Status& status, std::ostream& err);

// `program` (e.g. "onset-train") in the directory of this executable; the bare name, looked up
// on PATH, when that directory cannot be read.
std::string ProgramNextToSelf(const std::string& program);
// The message as indented JSON with the proto's field names, every field present.
std::string ToJson(const google::protobuf::Message& message);

}  // namespace onset::cli
