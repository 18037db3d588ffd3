// SqliteStore's feeds: the cell event log that `onset watch` follows, and the trainers' logs.
#include <algorithm>
#include <cctype>
#include <chrono>
#include <limits>
#include <string>
#include <thread>
#include <tuple>

#include <nlohmann/json.hpp>

#include "absl/strings/str_join.h"
#include "base/cell_id.h"
#include "common/log_line.h"
#include "common/status_macros.h"
#include "common/utf8.h"
#include "coordinator/store/sqlite_lifecycle.h"
#include "coordinator/store/sqlite_rows.h"
#include "coordinator/store/sqlite_store.h"

namespace onset::coordinator {
namespace {

// Cells named by prefix need at least this many hex digits, so that a typo is not a match.
constexpr size_t kMinCellPrefix = 4;
// Text of log lines per ReadLogs chunk: with lines of up to 8 KiB, a page of them would not fit
// in one gRPC reply (4 MiB by default).
constexpr size_t kMaxLogChunkBytes = 1 << 20;
// Metric points per read transaction of ForEachMetricPoint (a few MB copied out at most).
constexpr int kMetricPointsPerRead = 10'000;

absl::StatusOr<int64_t> LastSeq(db::Connection& db) {
  ONSET_ASSIGN_OR_RETURN(db::Statement stmt,
                         db.Prepare("SELECT COALESCE(MAX(seq), 0) FROM cell_events"));
  ONSET_ASSIGN_OR_RETURN(bool row, stmt.Step());
  return row ? stmt.Int(0) : 0;
}

// The columns every event read selects, in the order ReadEvents expects them.
constexpr const char* kEventColumns =
    "e.seq, s.name, c.hash, c.axes_json, e.old_state, e.new_state, e.at, e.attempt, e.worker_id, "
    "e.reason FROM cell_events e JOIN cells c ON c.id = e.cell_id JOIN studies s ON s.id = "
    "e.study_id";

// The events `stmt` (selecting kEventColumns) returns.
absl::StatusOr<std::vector<CellEvent>> ReadEvents(db::Statement& stmt) {
  std::vector<CellEvent> events;
  while (true) {
    ONSET_ASSIGN_OR_RETURN(bool row, stmt.Step());
    if (!row) return events;
    CellEvent e;
    e.seq = stmt.Int(0);
    e.study = stmt.Text(1);
    e.cell_id = stmt.Text(2);
    e.axes = rows::ParseAxes(stmt.Text(3));
    if (!stmt.IsNull(4)) e.from = CellStateFromName(stmt.Text(4));
    e.to = CellStateFromName(stmt.Text(5)).value_or(CellState::kQueued);
    e.at_unix_ms = stmt.Int(6);
    e.attempt = static_cast<int>(stmt.Int(7));
    e.worker_id = stmt.Text(8);
    e.reason = stmt.Text(9);
    events.push_back(std::move(e));
  }
}

struct CellMatch {
  int64_t row;
  std::string study;
  std::string hash;
};

// InvalidArgument unless `prefix` can name a cell: kMinCellPrefix or more lowercase hex digits.
absl::Status CheckCellPrefix(const std::string& prefix) {
  const bool hex = !prefix.empty() && std::all_of(prefix.begin(), prefix.end(), [](char c) {
    return std::isxdigit(static_cast<unsigned char>(c)) && !std::isupper(c);
  });
  if (hex && prefix.size() >= kMinCellPrefix) return absl::OkStatus();
  return absl::InvalidArgumentError("cell '" + prefix + "': a cell is named by its id, " +
                                    std::to_string(kMinCellPrefix) +
                                    " or more lowercase hex digits (see onset status)");
}

// The cells whose id starts with `prefix`, in `study` or (empty) every study.
absl::StatusOr<std::vector<CellMatch>> MatchCells(db::Connection& db, const std::string& study,
                                                  const std::string& prefix) {
  ONSET_RETURN_IF_ERROR(CheckCellPrefix(prefix));
  // A range of an index, whatever the number of cells: hex digits all sort below 'g' (never a
  // LIKE pattern: the prefix is data).
  ONSET_ASSIGN_OR_RETURN(db::Statement stmt,
                         db.Prepare(rows::CellsByPrefixSql(/*any_study=*/study.empty())));
  if (study.empty()) {
    stmt.BindAll(prefix, prefix + "g");
  } else {
    stmt.BindAll(prefix, prefix + "g", study);
  }
  std::vector<CellMatch> matches;
  while (true) {
    ONSET_ASSIGN_OR_RETURN(bool row, stmt.Step());
    if (!row) return matches;
    matches.push_back(CellMatch{stmt.Int(0), stmt.Text(1), stmt.Text(2)});
  }
}

// The cells of study `study_id` whose id begins with `prefix` (checked as MatchCells does), at
// most `limit`: a range of the (study_id, hash) index, hex digits all sorting below 'g'.
absl::StatusOr<std::vector<std::string>> CellsBeginning(db::Connection& db, int64_t study_id,
                                                        const std::string& prefix, int limit) {
  ONSET_ASSIGN_OR_RETURN(
      db::Statement stmt,
      db.Prepare("SELECT hash FROM cells WHERE study_id = ?1 AND hash >= ?2 AND hash < ?3 "
                 "ORDER BY hash LIMIT ?4"));
  stmt.BindAll(study_id, prefix, prefix + "g", static_cast<int64_t>(limit));
  std::vector<std::string> ids;
  while (true) {
    ONSET_ASSIGN_OR_RETURN(bool row, stmt.Step());
    if (!row) return ids;
    ids.push_back(stmt.Text(0));
  }
}

}  // namespace

absl::StatusOr<std::vector<std::string>> SqliteStore::ResolveCellIds(
    const std::string& study, const std::vector<std::string>& ids) {
  const bool all_full = std::all_of(ids.begin(), ids.end(), [](const std::string& id) {
    return id.size() >= base::kCellIdHexChars;
  });
  if (all_full) return ids;
  return Read<std::vector<std::string>>(
      [&](db::Connection& db) -> absl::StatusOr<std::vector<std::string>> {
        ONSET_ASSIGN_OR_RETURN(int64_t study_id, rows::StudyId(db, study));
        std::vector<std::string> resolved;
        resolved.reserve(ids.size());
        for (const std::string& id : ids) {
          if (id.size() >= base::kCellIdHexChars) {
            resolved.push_back(id);
            continue;
          }
          ONSET_RETURN_IF_ERROR(CheckCellPrefix(id));
          ONSET_ASSIGN_OR_RETURN(std::vector<std::string> matches,
                                 CellsBeginning(db, study_id, id, 6));
          if (matches.empty()) return absl::NotFoundError("no cell " + id + " in study " + study);
          if (matches.size() > 1) {
            return absl::InvalidArgumentError(
                "cell " + id + " is ambiguous in study " + study + ": it begins " +
                absl::StrJoin(matches.begin(),
                              matches.begin() + std::min<size_t>(5, matches.size()), ", ") +
                (matches.size() > 5 ? ", ..." : "") + "; give more digits");
          }
          resolved.push_back(matches.front());
        }
        return resolved;
      });
}

absl::StatusOr<StudySnapshot> SqliteStore::SnapshotStudy(const std::string& name) {
  return Read<StudySnapshot>([&](db::Connection& db) -> absl::StatusOr<StudySnapshot> {
    StudySnapshot snapshot;
    ONSET_ASSIGN_OR_RETURN(int64_t id, rows::StudyId(db, name));
    // One read transaction: the cells and the seq are of the same instant.
    ONSET_ASSIGN_OR_RETURN(snapshot.last_seq, LastSeq(db));
    ONSET_ASSIGN_OR_RETURN(snapshot.detail.study, rows::LoadStudy(db, id));
    ONSET_ASSIGN_OR_RETURN(snapshot.detail.cells, rows::LoadCells(db, id));
    return snapshot;
  });
}

absl::StatusOr<std::vector<CellEvent>> SqliteStore::StudyEvents(const std::string& study,
                                                                int64_t after_seq, int limit) {
  return Read<std::vector<CellEvent>>(
      [&](db::Connection& db) -> absl::StatusOr<std::vector<CellEvent>> {
        ONSET_ASSIGN_OR_RETURN(int64_t id, rows::StudyId(db, study));
        ONSET_ASSIGN_OR_RETURN(db::Statement stmt,
                               db.Prepare(std::string("SELECT ") + kEventColumns +
                                          " WHERE e.study_id = ? AND e.seq > ? "
                                          "ORDER BY e.seq LIMIT ?"));
        stmt.BindAll(id, after_seq, std::max(1, limit));
        return ReadEvents(stmt);
      });
}

absl::StatusOr<std::vector<CellEvent>> SqliteStore::EventsAfter(int64_t after_seq, int limit) {
  return Read<std::vector<CellEvent>>(
      [&](db::Connection& db) -> absl::StatusOr<std::vector<CellEvent>> {
        // A range of the primary key, whatever the length of the log.
        ONSET_ASSIGN_OR_RETURN(db::Statement stmt,
                               db.Prepare(std::string("SELECT ") + kEventColumns +
                                          " WHERE e.seq > ? ORDER BY e.seq LIMIT ?"));
        stmt.BindAll(after_seq, std::max(1, limit));
        return ReadEvents(stmt);
      });
}

absl::StatusOr<int64_t> SqliteStore::LastEventSeq() {
  return Read<int64_t>([&](db::Connection& db) { return LastSeq(db); });
}

int64_t SqliteStore::ChangeVersion() {
  if (writer_) return writer_->commits();
  // PRAGMA data_version changes whenever another connection (here: another process) commits.
  common::MutexLock lock(&versions_mu_);
  absl::StatusOr<db::Statement> stmt = versions_->Prepare("PRAGMA data_version");
  if (!stmt.ok()) return 0;
  absl::StatusOr<bool> row = stmt->Step();
  return row.ok() && *row ? stmt->Int(0) : 0;
}

int64_t SqliteStore::WaitForChange(int64_t seen, int64_t timeout_ms) {
  if (writer_) return writer_->WaitForCommit(seen, timeout_ms);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (true) {
    const int64_t version = ChangeVersion();
    const auto now = std::chrono::steady_clock::now();
    if (version != seen || now >= deadline) return version;
    std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(
        deadline - now, std::chrono::milliseconds(change_poll_ms_)));
  }
}

absl::StatusOr<int> SqliteStore::AppendLogs(const std::string& lease_id,
                                            const std::vector<LogLine>& lines) {
  for (const LogLine& line : lines) {
    if (line.line < 1) {
      return absl::InvalidArgumentError("log line number " + std::to_string(line.line) +
                                        ": lines are numbered from 1");
    }
  }
  return Write<int>([&](db::Connection& db) -> absl::StatusOr<int> {
    ONSET_ASSIGN_OR_RETURN(
        db::Statement find,
        db.Prepare("SELECT id, cell_id, attempt FROM attempts WHERE lease_id = ?"));
    find.BindAll(lease_id);
    ONSET_ASSIGN_OR_RETURN(bool found, find.Step());
    if (!found) {
      return absl::FailedPreconditionError("lease " + lease_id + " is unknown; stop the job");
    }
    const int64_t attempt_id = find.Int(0);
    // Fenced like every call of a lease: only the cell's current open attempt writes.
    ONSET_ASSIGN_OR_RETURN(lifecycle::LoadedCell cell, lifecycle::LoadCell(db, find.Int(1)));
    ONSET_ASSIGN_OR_RETURN(
        life::Step step,
        lifecycle::Apply(db, cell, life::Contact{static_cast<int>(find.Int(2))}, LifeContext(0)));
    if (step.verdict == life::Verdict::kFenced) {
      return absl::FailedPreconditionError("lease " + lease_id + " (cell " + cell.hash +
                                           "): " + step.message);
    }
    ONSET_ASSIGN_OR_RETURN(
        db::Statement upsert,
        db.Prepare("INSERT INTO log_lines (attempt_id, line, at, text) VALUES (?, ?, ?, ?) "
                   "ON CONFLICT (attempt_id, line) DO UPDATE SET at = excluded.at, "
                   "text = excluded.text"));
    int64_t newest = 0;
    for (const LogLine& line : lines) {
      upsert.Reset();
      // Bounded (so that a trainer printing a huge blob cannot bloat the database) and cut on a
      // character boundary, so that what is stored can always be read back into a proto.
      upsert.BindAll(attempt_id, line.line, line.at_unix_ms, common::BoundLogLine(line.text));
      ONSET_RETURN_IF_ERROR(upsert.Run());
      newest = std::max(newest, line.line);
    }
    ONSET_ASSIGN_OR_RETURN(db::Statement trim,
                           db.Prepare("DELETE FROM log_lines WHERE attempt_id = ? AND line <= ?"));
    trim.BindAll(attempt_id, newest - kMaxLogLinesPerAttempt);
    ONSET_RETURN_IF_ERROR(trim.Run());
    return static_cast<int>(lines.size());
  });
}

absl::StatusOr<LogChunk> SqliteStore::ReadLogs(const LogQuery& query) {
  return Read<LogChunk>([&](db::Connection& db) -> absl::StatusOr<LogChunk> {
    if (!query.study.empty()) ONSET_RETURN_IF_ERROR(rows::StudyId(db, query.study).status());
    ONSET_ASSIGN_OR_RETURN(std::vector<CellMatch> matches, MatchCells(db, query.study, query.cell));
    if (matches.empty()) {
      return absl::NotFoundError("no cell " + query.cell +
                                 (query.study.empty() ? "" : " in study " + query.study));
    }
    if (matches.size() > 1) {
      std::string names;
      for (const CellMatch& m : matches)
        names += (names.empty() ? "" : ", ") + m.study + "/" + m.hash;
      return absl::InvalidArgumentError("cell " + query.cell + " is ambiguous: it matches " +
                                        names + "; give more digits or the study");
    }
    const CellMatch& cell = matches.front();
    LogChunk chunk;
    chunk.study = cell.study;
    chunk.cell_id = cell.hash;
    ONSET_ASSIGN_OR_RETURN(
        db::Statement state,
        db.Prepare("SELECT state, (SELECT COALESCE(MAX(attempt), 0) FROM attempts "
                   "WHERE cell_id = ?1) FROM cells WHERE id = ?1"));
    state.BindAll(cell.row);
    ONSET_ASSIGN_OR_RETURN(bool has_state, state.Step());
    if (!has_state) return absl::NotFoundError("cell " + cell.hash + " vanished");
    chunk.cell_state = CellStateFromName(state.Text(0)).value_or(CellState::kQueued);
    chunk.latest_attempt = static_cast<int>(state.Int(1));
    chunk.attempt = query.attempt > 0 ? query.attempt : chunk.latest_attempt;
    if (chunk.attempt == 0) return chunk;  // never started: nothing to show yet

    ONSET_ASSIGN_OR_RETURN(db::Statement attempt,
                           db.Prepare("SELECT id, worker_id, ended_at IS NOT NULL FROM attempts "
                                      "WHERE cell_id = ? AND attempt = ?"));
    attempt.BindAll(cell.row, chunk.attempt);
    ONSET_ASSIGN_OR_RETURN(bool has_attempt, attempt.Step());
    if (!has_attempt) {
      return absl::NotFoundError("cell " + cell.hash + " has no attempt " +
                                 std::to_string(chunk.attempt) + " (it has " +
                                 std::to_string(chunk.latest_attempt) + ")");
    }
    const int64_t attempt_id = attempt.Int(0);
    chunk.worker_id = attempt.Text(1);
    chunk.ended = attempt.Int(2) != 0;

    ONSET_ASSIGN_OR_RETURN(
        db::Statement first,
        db.Prepare("SELECT COALESCE(MIN(line), 0) FROM log_lines WHERE attempt_id = ?"));
    first.BindAll(attempt_id);
    ONSET_ASSIGN_OR_RETURN(bool has_first, first.Step());
    chunk.first_line = has_first ? first.Int(0) : 0;
    ONSET_ASSIGN_OR_RETURN(
        db::Statement lines,
        db.Prepare("SELECT line, at, text FROM log_lines WHERE attempt_id = ? AND line > ? "
                   "ORDER BY line LIMIT ?"));
    lines.BindAll(attempt_id, query.after_line, std::max(1, query.limit));
    size_t bytes = 0;
    while (true) {
      ONSET_ASSIGN_OR_RETURN(bool row, lines.Step());
      if (!row) return chunk;
      // Repaired on the way out too: databases written before lines were cut between
      // characters hold some that are not UTF-8, which no reply could carry.
      std::string text = common::SanitizeUtf8(lines.Text(2));
      bytes += text.size();
      if (!chunk.lines.empty() && bytes > kMaxLogChunkBytes) return chunk;  // the rest next time
      chunk.lines.push_back(LogLine{lines.Int(0), lines.Int(1), std::move(text)});
    }
  });
}

absl::StatusOr<std::vector<std::pair<std::string, int>>> SqliteStore::MetricNames(
    const std::string& study) {
  using Names = std::vector<std::pair<std::string, int>>;
  return Read<Names>([&](db::Connection& db) -> absl::StatusOr<Names> {
    ONSET_ASSIGN_OR_RETURN(int64_t study_id, rows::StudyId(db, study));
    // Per cell, its distinct names from the metrics primary key (cell_id, name, tokens).
    ONSET_ASSIGN_OR_RETURN(
        db::Statement stmt,
        db.Prepare("SELECT name, COUNT(*) FROM (SELECT DISTINCT m.cell_id, m.name FROM metrics m "
                   "JOIN cells c ON c.id = m.cell_id WHERE c.study_id = ? AND c.role <> 'trunk') "
                   "GROUP BY name ORDER BY name"));
    stmt.BindAll(study_id);
    Names names;
    while (true) {
      ONSET_ASSIGN_OR_RETURN(bool row, stmt.Step());
      if (!row) return names;
      names.emplace_back(stmt.Text(0), static_cast<int>(stmt.Int(1)));
    }
  });
}

absl::Status SqliteStore::ForEachMetricPoint(
    const std::string& study, const std::vector<std::string>& metrics,
    const std::vector<std::string>& cell_ids,
    const std::function<bool(const std::string&, const std::string&, int64_t, double, int64_t)>&
        point) {
  struct Point {
    int64_t cell_row;
    std::string cell;
    std::string name;
    int64_t tokens;
    double value;
    int64_t at_unix_ms;
  };
  // Page by page, each read in its own short transaction and copied out: `point` (which may
  // write to a slow client) never runs while a reader is held, so a client that stops reading
  // pins neither a pooled connection nor the WAL. The pages follow the metrics primary key
  // (cell row, name, tokens), so a point is read once even while new ones are added.
  const std::string metric_list = nlohmann::json(metrics).dump();
  const std::string cell_list = nlohmann::json(cell_ids).dump();
  // Before every key: cell rows start at 1 and token counts at 0.
  std::tuple<int64_t, std::string, int64_t> after{0, "", -1};
  for (bool first = true;; first = false) {
    ONSET_ASSIGN_OR_RETURN(
        std::vector<Point> page,
        Read<std::vector<Point>>([&](db::Connection& db) -> absl::StatusOr<std::vector<Point>> {
          ONSET_ASSIGN_OR_RETURN(int64_t study_id, rows::StudyId(db, study));
          if (first) ONSET_RETURN_IF_ERROR(rows::CellRows(db, study_id, cell_ids).status());
          // The lists travel as JSON arrays bound to one parameter each: the SQL text never
          // changes.
          ONSET_ASSIGN_OR_RETURN(
              db::Statement stmt,
              db.Prepare(
                  "SELECT m.cell_id, c.hash, m.name, m.tokens, m.value, m.at_unix_ms FROM metrics "
                  "m "
                  "JOIN cells c ON c.id = m.cell_id WHERE c.study_id = ?1 AND c.role <> 'trunk' "
                  "AND (json_array_length(?2) = 0 OR m.name IN (SELECT value FROM json_each(?2))) "
                  "AND (json_array_length(?3) = 0 OR c.hash IN (SELECT value FROM json_each(?3))) "
                  "AND (m.cell_id, m.name, m.tokens) > (?4, ?5, ?6) "
                  "ORDER BY m.cell_id, m.name, m.tokens LIMIT ?7"));
          // A range of the primary key: each page seeks to where the last one ended, instead of
          // reading past every point before it.
          stmt.BindAll(study_id, metric_list, cell_list, std::get<0>(after), std::get<1>(after),
                       std::get<2>(after), int64_t{kMetricPointsPerRead});
          std::vector<Point> points;
          while (true) {
            ONSET_ASSIGN_OR_RETURN(bool row, stmt.Step());
            if (!row) return points;
            points.push_back(
                Point{stmt.Int(0), stmt.Text(1), stmt.Text(2), stmt.Int(3),
                      stmt.IsNull(4) ? std::numeric_limits<double>::quiet_NaN() : stmt.Double(4),
                      stmt.IsNull(5) ? 0 : stmt.Int(5)});
          }
        }));
    for (const Point& p : page) {
      if (!point(p.cell, p.name, p.tokens, p.value, p.at_unix_ms)) return absl::OkStatus();
    }
    if (page.size() < static_cast<size_t>(kMetricPointsPerRead)) return absl::OkStatus();
    after = {page.back().cell_row, page.back().name, page.back().tokens};
  }
}

}  // namespace onset::coordinator
