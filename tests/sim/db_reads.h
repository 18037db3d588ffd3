// What the lifecycle simulator reads of a coordinator's database: the one it serves (read-only,
// while it serves), a backup, or the database once everything has stopped (checks.h).
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

namespace onset::sim {

// Runs `sql` on `db` read-only and calls `row` for each result row; an error becomes a line of
// `problems`.
void ForEachRow(const std::string& db, const std::string& sql,
                const std::function<void(sqlite3_stmt*)>& row, std::vector<std::string>* problems);

// A column's text ("" for NULL).
std::string Text(sqlite3_stmt* row, int column);

// What decides whether a cell's points may go: its lineage (a fresh rerun starts another), its
// latest attempt (a claim drops the points past the checkpoint it resumes) and where that
// attempt's trainer said it started (the points past it go).
struct CellMark {
  int64_t lineage = 0;
  int latest_attempt = 0;
  std::optional<int64_t> started_at_tokens;
  std::string intent;  // a pending cancel or rerun ('rerun_fresh' ...), '' when none

  bool operator==(const CellMark& o) const {
    return lineage == o.lineage && latest_attempt == o.latest_attempt &&
           started_at_tokens == o.started_at_tokens;
  }
};

// "study/cell" -> its mark.
std::map<std::string, CellMark> ReadCellMarks(const std::string& db,
                                              std::vector<std::string>* problems);

// A stored point: "study/cell", the metric, the tokens.
using PointKey = std::tuple<std::string, std::string, int64_t>;
std::set<PointKey> ReadPoints(const std::string& db, std::vector<std::string>* problems);

// When a backup file was taken (its stamp, db/instance.h), by the coordinator's clock; nullopt
// for a file without one (a copy by a version that did not stamp them).
std::optional<int64_t> BackupTakenUnixMs(const std::string& file);

}  // namespace onset::sim
