// The store's logs: the stderr lines of each attempt, kept to a bound, read by cell and attempt.
//
// Thread-safety: implementations are safe to call from any thread. Errors shared by all methods:
// Unavailable (may pass: busy, disk full) or Internal for database failures (the message names
// the file; db/sqlite.h maps SQLite's errors).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "coordinator/cells/cell_state.h"

namespace onset::coordinator {

// Log lines kept per attempt; older ones are dropped as new ones arrive.
inline constexpr int64_t kMaxLogLinesPerAttempt = 20000;

// One line a trainer wrote to stderr. `line` counts from 1 per attempt.
struct LogLine {
  int64_t line = 0;
  int64_t at_unix_ms = 0;
  std::string text;
};

// Which log `onset logs` reads: a cell (by id or a unique prefix of it, in `study` or, when
// empty, in any study), one attempt (0 = the latest), lines after `after_line`.
struct LogQuery {
  std::string study;
  std::string cell;
  int attempt = 0;
  int64_t after_line = 0;
  int limit = 1000;
};

struct LogChunk {
  std::string study;
  std::string cell_id;
  int attempt = 0;         // 0 when the cell has no attempt yet
  int latest_attempt = 0;  // the cell's newest attempt
  std::string worker_id;
  bool ended = false;  // the attempt has ended: no more lines will come
  CellState cell_state = CellState::kQueued;
  int64_t first_line = 0;  // the oldest line still kept (older ones were dropped), 0 if none
  // In order, after query.after_line, at most query.limit and about 1 MiB of text (at least
  // one line): fewer than the limit does not mean there are no more.
  std::vector<LogLine> lines;
};

// Trainer logs.
class LogStore {
 public:
  virtual ~LogStore() = default;

  // Stores log lines of the attempt under the lease (a line re-sent under its number replaces
  // itself) and drops the attempt's oldest lines beyond kMaxLogLinesPerAttempt. Returns the
  // number written. FailedPrecondition like the other lease calls.
  virtual absl::StatusOr<int> AppendLogs(const std::string& lease_id,
                                         const std::vector<LogLine>& lines) = 0;
  // NotFound for an unknown study, cell or attempt; InvalidArgument when a cell prefix matches
  // several cells (the message lists them).
  virtual absl::StatusOr<LogChunk> ReadLogs(const LogQuery& query) = 0;
};

}  // namespace onset::coordinator
