// `onset cancel` and `onset rerun`: act on the cells of a study.
//
//   onset cancel STUDY [CELL...]      stop cells that have not ended (all of the study's when no
//                                     cell is named); running ones stop at their next heartbeat
//   onset rerun STUDY [CELL...] [--state failed,diverged,...] [--where arch=swa,window=16]
//                     [--fresh]       queue ended cells again (default states: failed, diverged,
//                                     cancelled), resuming from their checkpoints unless --fresh
//
// Exit codes as every command (docs/cli.md): 0 done; 1 could not be done (the coordinator is
// unreachable or failed, the study or a named cell does not exist); 2 bad input (an unknown or
// unrerunnable state, a malformed --where).
#pragma once

#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "cli/client/study_client.h"
#include "cli/commands/command.h"

namespace onset::cli {

struct RerunOptions {
  std::string study;
  std::vector<std::string> cells;
  std::string states;  // comma-separated state names; empty = the default set
  std::string where;   // comma-separated axis=value pairs
  bool fresh = false;
  bool json = false;
};

// "arch=swa,window=16" -> {arch: swa, window: 16}; nullopt and *error on a malformed pair.
std::optional<std::map<std::string, std::string>> ParseWhere(const std::string& text,
                                                             std::string* error);
// "failed,diverged" -> the states; nullopt and *error naming an unknown one.
std::optional<std::vector<v1::CellState>> ParseStates(const std::string& text, std::string* error);

// "failed,running" -> the states, any state allowed (status filters); nullopt and *error
// naming an unknown one.
std::optional<std::vector<v1::CellState>> ParseAnyStates(const std::string& text,
                                                         std::string* error);

// Keeps the cells whose state is in `states` (empty = any) and whose display axes match
// `where`; the study summary is left as it is (it counts every cell).
void FilterCells(const std::vector<v1::CellState>& states,
                 const std::map<std::string, std::string>& where, v1::GetStudyResponse* study);

int CancelCommand(StudyClient& client, const std::string& study,
                  const std::vector<std::string>& cells, bool json, std::ostream& out,
                  std::ostream& err);
int RerunCommand(StudyClient& client, const RerunOptions& options, std::ostream& out,
                 std::ostream& err);

// Adds cancel and rerun to `app`.
void AddCellCommands(CLI::App& app, CommandTable& table);

}  // namespace onset::cli
