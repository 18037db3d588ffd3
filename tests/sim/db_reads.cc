#include "tests/sim/db_reads.h"

namespace onset::sim {

void ForEachRow(const std::string& db, const std::string& sql,
                const std::function<void(sqlite3_stmt*)>& row, std::vector<std::string>* problems) {
  sqlite3* conn = nullptr;
  if (sqlite3_open_v2(db.c_str(), &conn, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    problems->push_back("cannot open " + db + ": " + sqlite3_errmsg(conn));
    sqlite3_close(conn);
    return;
  }
  sqlite3_busy_timeout(conn, 10'000);
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v2(conn, sql.c_str(), -1, &stmt, nullptr) != SQLITE_OK) {
    problems->push_back("bad query on " + db + ": " + std::string(sqlite3_errmsg(conn)));
  } else {
    int rc = SQLITE_ROW;
    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) row(stmt);
    if (rc != SQLITE_DONE) {
      problems->push_back("reading " + db + ": " + std::string(sqlite3_errmsg(conn)));
    }
  }
  sqlite3_finalize(stmt);
  sqlite3_close(conn);
}

std::string Text(sqlite3_stmt* row, int column) {
  const unsigned char* text = sqlite3_column_text(row, column);
  return text ? reinterpret_cast<const char*>(text) : "";
}

std::map<std::string, CellMark> ReadCellMarks(const std::string& db,
                                              std::vector<std::string>* problems) {
  std::map<std::string, CellMark> marks;
  ForEachRow(
      db,
      "SELECT s.name, c.hash, c.lineage, c.intent, a.attempt, a.started_at_tokens FROM cells c "
      "JOIN studies s ON s.id = c.study_id LEFT JOIN attempts a ON a.cell_id = c.id AND "
      "a.attempt = (SELECT MAX(attempt) FROM attempts WHERE cell_id = c.id)",
      [&](sqlite3_stmt* r) {
        CellMark m;
        m.lineage = sqlite3_column_int64(r, 2);
        m.intent = Text(r, 3);
        m.latest_attempt = sqlite3_column_int(r, 4);
        if (sqlite3_column_type(r, 5) != SQLITE_NULL)
          m.started_at_tokens = sqlite3_column_int64(r, 5);
        marks[Text(r, 0) + "/" + Text(r, 1)] = m;
      },
      problems);
  return marks;
}

std::set<PointKey> ReadPoints(const std::string& db, std::vector<std::string>* problems) {
  std::set<PointKey> points;
  ForEachRow(
      db,
      "SELECT s.name, c.hash, m.name, m.tokens FROM metrics m JOIN cells c ON c.id = m.cell_id "
      "JOIN studies s ON s.id = c.study_id",
      [&](sqlite3_stmt* r) {
        points.emplace(Text(r, 0) + "/" + Text(r, 1), Text(r, 2), sqlite3_column_int64(r, 3));
      },
      problems);
  return points;
}

std::optional<int64_t> BackupTakenUnixMs(const std::string& file) {
  std::vector<std::string> problems;
  std::optional<int64_t> taken;
  ForEachRow(
      file, "SELECT backup_taken_unix_ms FROM instance WHERE id = 1",
      [&](sqlite3_stmt* r) {
        if (sqlite3_column_type(r, 0) != SQLITE_NULL) taken = sqlite3_column_int64(r, 0);
      },
      &problems);
  return taken;
}

}  // namespace onset::sim
