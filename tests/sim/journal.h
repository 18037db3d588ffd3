// The journal of the lifecycle simulator (simulation.h): what every scripted trainer did, one
// line per event, appended by the trainers themselves (each line one write(2) on a file opened
// with O_APPEND, so that lines of concurrent trainers never interleave) and read by the checks.
//
//   <unix ms> <KIND> cell=<id> attempt=<n> pid=<pid> [key=value ...]
//
// Kinds: START (a trainer began: run=<id> from=<tokens>), NEWRUN (it started a run from
// scratch: run=<id>), CRASH (it failed on purpose), END (it stopped: how=done|stopped|orphaned),
// VIOLATION (it saw a broken promise: what=<text, spaces as underscores>). A trainer killed
// outright writes no END.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace onset::sim {

struct JournalEntry {
  int64_t at_unix_ms = 0;
  std::string kind;
  std::string cell;
  int attempt = 0;
  int pid = 0;
  std::map<std::string, std::string> fields;  // the other key=value pairs

  std::string Field(const std::string& key) const;
};

// The journal file of a journal directory, and the directory of the per-cell locks the trainers
// hold while they run.
std::string JournalFile(const std::string& dir);
std::string LockDir(const std::string& dir);

// Appends one line (`fields` in order) with one write(2); the line never splits.
void Append(const std::string& dir, const JournalEntry& entry);

// Every line of the journal that parses, in order.
std::vector<JournalEntry> ReadJournal(const std::string& dir);

// nullopt for a line that is not a journal line.
std::optional<JournalEntry> ParseJournalLine(const std::string& line);

}  // namespace onset::sim
