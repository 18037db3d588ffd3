#include "tests/sim/checks.h"

#include <sqlite3.h>

#include <functional>
#include <set>

#include "tests/sim/journal.h"

namespace onset::sim {
namespace {

// Runs `sql` on `db` read-only and calls `row` for each result row; an error becomes a line of
// `problems`.
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
    problems->push_back("bad query: " + std::string(sqlite3_errmsg(conn)));
  } else {
    while (sqlite3_step(stmt) == SQLITE_ROW) row(stmt);
  }
  sqlite3_finalize(stmt);
  sqlite3_close(conn);
}

std::string Text(sqlite3_stmt* row, int column) {
  const unsigned char* text = sqlite3_column_text(row, column);
  return text ? reinterpret_cast<const char*>(text) : "";
}

struct Cell {
  std::string study;
  std::string id;
  std::string state;
  int64_t budget = 0;
  int64_t tokens_done = 0;
  std::set<int64_t> loss_tokens;
  std::set<int64_t> runs;
  int64_t max_point_tokens = 0;
};

}  // namespace

std::vector<std::string> CheckInvariants(const CheckInput& input, CellCounts* counts) {
  std::vector<std::string> problems;
  const std::vector<JournalEntry> journal = ReadJournal(input.journal_dir);

  // 1, 2: what the trainers saw.
  std::map<std::pair<std::string, int>, bool> started, crashed;
  std::map<uint64_t, int64_t> run_started_at;  // run id -> NEWRUN time
  for (const JournalEntry& e : journal) {
    if (e.kind == "VIOLATION") {
      const bool pruned_by_a_lost_timeline =
          !input.restores_unix_ms.empty() && e.at_unix_ms >= input.restores_unix_ms.front() &&
          e.Field("what").rfind("named_checkpoint_missing_", 0) == 0;
      if (pruned_by_a_lost_timeline) {
        ++counts->missing_after_restore;
        continue;
      }
      problems.push_back("cell " + e.cell + " attempt " + std::to_string(e.attempt) + ": " +
                         e.Field("what"));
    } else if (e.kind == "START") {
      started[{e.cell, e.attempt}] = true;
      ++counts->trainers;
    } else if (e.kind == "CRASH") {
      crashed[{e.cell, e.attempt}] = true;
    } else if (e.kind == "NEWRUN") {
      run_started_at[std::stoull(e.Field("run"))] = e.at_unix_ms;
    }
  }

  // The cells and their points.
  std::map<std::string, Cell> cells;  // by "study/id"
  ForEachRow(
      input.db,
      "SELECT s.name, c.hash, c.state, c.tokens_budget, c.tokens_done FROM cells c "
      "JOIN studies s ON s.id = c.study_id",
      [&](sqlite3_stmt* r) {
        Cell c;
        c.study = Text(r, 0);
        c.id = Text(r, 1);
        c.state = Text(r, 2);
        c.budget = sqlite3_column_int64(r, 3);
        c.tokens_done = sqlite3_column_int64(r, 4);
        cells[c.study + "/" + c.id] = c;
      },
      &problems);
  ForEachRow(
      input.db,
      "SELECT s.name, c.hash, m.name, m.tokens, m.value FROM metrics m JOIN cells c ON "
      "c.id = m.cell_id JOIN studies s ON s.id = c.study_id WHERE m.name IN ('train/loss', "
      "'sim/run') OR m.tokens > c.tokens_budget",
      [&](sqlite3_stmt* r) {
        Cell& c = cells[Text(r, 0) + "/" + Text(r, 1)];
        const std::string name = Text(r, 2);
        const int64_t tokens = sqlite3_column_int64(r, 3);
        c.max_point_tokens = std::max(c.max_point_tokens, tokens);
        if (name == "train/loss") c.loss_tokens.insert(tokens);
        if (name == "sim/run") c.runs.insert(static_cast<int64_t>(sqlite3_column_double(r, 4)));
      },
      &problems);

  std::set<std::string> ids;
  for (const auto& [key, c] : cells) ids.insert(c.id);
  for (const std::string& id : input.expected_cells) {
    if (!ids.count(id)) problems.push_back("cell " + id + ": missing from the database");
  }

  for (const auto& [key, c] : cells) {
    const std::string name = "cell " + key + " (" + c.state + ")";
    if (c.state == "succeeded") {
      ++counts->succeeded;
    } else if (c.state == "failed") {
      ++counts->failed;
    } else if (c.state == "cancelled") {
      ++counts->cancelled;
    } else if (c.state == "diverged") {
      ++counts->diverged;
    } else {
      ++counts->unfinished;
      problems.push_back(name + ": did not end in the time it was given");
    }
    // 3: one run.
    if (c.runs.size() > 1) {
      std::string runs;
      for (int64_t r : c.runs) runs += " " + std::to_string(r);
      problems.push_back(name + ": its points come from " + std::to_string(c.runs.size()) +
                         " runs:" + runs);
    }
    if (auto fresh = input.fresh_reruns.find(c.id); fresh != input.fresh_reruns.end()) {
      for (int64_t run : c.runs) {
        auto started_at = run_started_at.find(static_cast<uint64_t>(run));
        if (started_at == run_started_at.end() || started_at->second < fresh->second) {
          problems.push_back(name + ": keeps points of run " + std::to_string(run) +
                             ", which started before the fresh rerun asked at " +
                             std::to_string(fresh->second));
        }
      }
    }
    // 4: a whole curve, nothing past the budget.
    if (c.max_point_tokens > c.budget + input.step_tokens) {
      problems.push_back(name + ": a point at " + std::to_string(c.max_point_tokens) +
                         " tokens, past its budget of " + std::to_string(c.budget));
    }
    if (c.state == "succeeded") {
      int missing = 0;
      for (int64_t t = input.step_tokens; t <= c.budget; t += input.step_tokens) {
        missing += c.loss_tokens.count(t) ? 0 : 1;
      }
      if (missing > 0) {
        problems.push_back(name + ": its curve misses " + std::to_string(missing) +
                           " of its steps");
      }
      if (c.tokens_done != c.budget) {
        problems.push_back(name + ": shows " + std::to_string(c.tokens_done) + " of " +
                           std::to_string(c.budget) + " tokens done");
      }
    }
  }

  // 5: failures counted only for real ones.
  ForEachRow(
      input.db,
      "SELECT c.hash, a.attempt, a.outcome, a.failure_class FROM attempts a "
      "JOIN cells c ON c.id = a.cell_id",
      [&](sqlite3_stmt* r) {
        ++counts->attempts;
        const std::string cell = Text(r, 0);
        const int attempt = sqlite3_column_int(r, 1);
        const std::string failure = Text(r, 3);
        const std::string what = "cell " + cell + " attempt " + std::to_string(attempt);
        if (failure == "crash" && !crashed.count({cell, attempt})) {
          problems.push_back(what + ": a crash counted, but its trainer did not crash");
        }
        if (failure == "lost" && !started.count({cell, attempt})) {
          problems.push_back(what + ": a loss counted, but its trainer never ran");
        }
      },
      &problems);
  return problems;
}

}  // namespace onset::sim
