// `onset artifacts STUDY [CELL] [--json]`: what a study's cells produced and where it is, from
// the coordinator's records (DescribeCell), not by walking a file system the CLI may not see:
// each cell's checkpoints (tokens, the attempt that wrote it, its size as the trainer reported
// it, its path under the coordinator's checkpoint root and whether the file is still there, as
// the coordinator sees it) and, for one cell or with --json, its config. Every cell of the
// study, trunks included (their checkpoints start the branches), or the one named.
//
// Exit codes as every command: 0 listed; 1 the coordinator failed; 2 bad input (no such study
// or cell).
#pragma once

#include <ostream>
#include <string>

#include "cli/client/study_client.h"
#include "cli/commands/command.h"

namespace onset::cli {

struct ArtifactsOptions {
  std::string study;
  std::string cell;  // an id or a unique prefix; empty: every cell
  bool json = false;
};

int ArtifactsCommand(StudyClient& client, const ArtifactsOptions& options, std::ostream& out,
                     std::ostream& err);

// Adds artifacts to `app`.
void AddArtifactsCommand(CLI::App& app, CommandTable& table);

}  // namespace onset::cli
