// The CLI's subcommands that talk to a running coordinator. Each returns the process's exit code
// (cli/exit_codes.h): 0 success, 1 failure (unreachable coordinator, unknown study, ...), 2 bad
// input (a bad study file, or one that would change the stored cells of its study).
#pragma once

#include <ostream>
#include <string>

#include "absl/status/status.h"
#include "cli/study_client.h"
#include "cli/style.h"
#include "google/protobuf/message.h"

namespace onset::cli {

// `onset submit [--dry-run] FILE [--json]`. A dry run asks the coordinator what the submission
// would do (it knows which cells exist and enforces the append-only rule) and prints every cell
// as new or existing, writing nothing.
int SubmitCommand(StudyClient& client, const std::string& file, bool dry_run, bool json,
                  std::ostream& out, std::ostream& err);
// `onset status [STUDY] [--json]`; an empty `study` lists every study.
// `states` and `where` (comma-separated, as `--state` and `--where` take them) filter the cells
// of one study; the summary above the table still counts them all.
int StatusCommand(StudyClient& client, const std::string& study, bool json, std::ostream& out,
                  std::ostream& err, const std::string& states = "", const std::string& where = "",
                  const Style& style = Style());
// `onset workers`: registered workers, their jobs and heartbeat age.
int WorkersCommand(StudyClient& client, bool json, std::ostream& out, std::ostream& err);
// `onset results STUDY [--json]`.
int ResultsCommand(StudyClient& client, const std::string& study, bool json, std::ostream& out,
                   std::ostream& err);

// Shared helpers for the subcommands.
// Prints `status` for a person and returns its exit code (2 for InvalidArgument and
// FailedPrecondition, else 1).
int ReportError(const absl::Status& status, std::ostream& err);
// The message as indented JSON with the proto's field names, every field present.
std::string ToJson(const google::protobuf::Message& message);

// The absolute directory holding `path` (a study file): where its relative data paths point.
std::string StudyBaseDir(const std::string& path);

}  // namespace onset::cli
