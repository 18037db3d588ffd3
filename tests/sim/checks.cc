#include "tests/sim/checks.h"

#include <sqlite3.h>

#include <filesystem>
#include <optional>
#include <set>

#include "base/checkpoint_name.h"
#include "tests/sim/db_reads.h"
#include "tests/sim/journal.h"

namespace onset::sim {
namespace {

namespace fs = std::filesystem;

struct Cell {
  std::string study;
  std::string id;
  std::string state;
  std::string role;  // cell, trunk or branch
  int64_t budget = 0;
  int64_t tokens_done = 0;
  int64_t branch_tokens = 0;  // a branch's branch point
  std::set<int64_t> loss_tokens;
  std::set<int64_t> runs;        // the runs of its points (a branch: past its branch point)
  std::set<int64_t> trunk_runs;  // a branch: the runs of its points up to its branch point
  int64_t max_point_tokens = 0;
};

// A run, as its first trainer wrote it down (NEWRUN).
struct Run {
  int64_t at_unix_ms = 0;
  std::string cell;
  std::optional<uint64_t> trunk_run;  // a branch's run: the trunk run it started from
};

std::string Runs(const std::set<int64_t>& runs) {
  std::string text;
  for (int64_t r : runs) text += " " + std::to_string(r);
  return text;
}

}  // namespace

std::vector<std::string> CheckInvariants(const CheckInput& input, CellCounts* counts) {
  std::vector<std::string> problems;
  const std::vector<JournalEntry> journal = ReadJournal(input.journal_dir);

  // 1, 2: what the trainers saw.
  std::map<std::pair<std::string, int>, bool> started, crashed;
  std::map<uint64_t, Run> runs;  // run id -> its NEWRUN
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
      Run& run = runs[std::stoull(e.Field("run"))];
      run.at_unix_ms = e.at_unix_ms;
      run.cell = e.cell;
      if (!e.Field("trunk_run").empty()) run.trunk_run = std::stoull(e.Field("trunk_run"));
    }
  }

  // The cells and their points.
  std::map<std::string, Cell> cells;  // by "study/id"
  ForEachRow(
      input.db,
      "SELECT s.name, c.hash, c.state, c.tokens_budget, c.tokens_done, c.role, c.branch_tokens "
      "FROM cells c JOIN studies s ON s.id = c.study_id",
      [&](sqlite3_stmt* r) {
        Cell c;
        c.study = Text(r, 0);
        c.id = Text(r, 1);
        c.state = Text(r, 2);
        c.budget = sqlite3_column_int64(r, 3);
        c.tokens_done = sqlite3_column_int64(r, 4);
        c.role = Text(r, 5);
        c.branch_tokens = sqlite3_column_int64(r, 6);
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
        if (name == "sim/run") {
          const int64_t run = static_cast<int64_t>(sqlite3_column_double(r, 4));
          (c.role == "branch" && tokens <= c.branch_tokens ? c.trunk_runs : c.runs).insert(run);
        }
      },
      &problems);

  std::set<std::string> ids;
  for (const auto& [key, c] : cells) ids.insert(c.id);
  for (const std::string& id : input.expected_cells) {
    if (!ids.count(id)) problems.push_back("cell " + id + ": missing from the database");
  }

  for (const auto& [key, c] : cells) {
    const std::string name = "cell " + key + " (" + c.state + ")";
    const bool counted = !input.uncounted_studies.count(c.study);
    if (c.state == "succeeded") {
      counts->succeeded += counted;
    } else if (c.state == "failed") {
      counts->failed += counted;
    } else if (c.state == "cancelled") {
      counts->cancelled += counted;
    } else if (c.state == "diverged") {
      counts->diverged += counted;
    } else {
      counts->unfinished += counted;
      problems.push_back(name + ": did not end in the time it was given");
    }
    const bool branch = c.role == "branch";
    // 3: one run (a branch: one trunk run up to its branch point, one of its own past it, which
    // started from that trunk run).
    if (c.runs.size() > 1) {
      problems.push_back(name + ": its points" + (branch ? " past its branch point" : "") +
                         " come from " + std::to_string(c.runs.size()) + " runs:" + Runs(c.runs));
    }
    if (c.trunk_runs.size() > 1) {
      problems.push_back(name + ": its points up to its branch point come from " +
                         std::to_string(c.trunk_runs.size()) + " trunk runs:" + Runs(c.trunk_runs));
    }
    if (branch && c.trunk_runs.size() == 1) {
      const uint64_t trunk_run = static_cast<uint64_t>(*c.trunk_runs.begin());
      for (int64_t own : c.runs) {
        auto run = runs.find(static_cast<uint64_t>(own));
        if (run != runs.end() && run->second.trunk_run && *run->second.trunk_run != trunk_run) {
          problems.push_back(name + ": its decay (run " + std::to_string(own) +
                             ") started from trunk run " + std::to_string(*run->second.trunk_run) +
                             ", but its points up to its branch point are of trunk run " +
                             std::to_string(trunk_run));
        }
      }
    }
    if (auto fresh = input.fresh_reruns.find(c.id); fresh != input.fresh_reruns.end()) {
      for (int64_t own : c.runs) {
        auto run = runs.find(static_cast<uint64_t>(own));
        if (run == runs.end() || run->second.at_unix_ms < fresh->second) {
          problems.push_back(name + ": keeps points of run " + std::to_string(own) +
                             ", which started before the fresh rerun asked at " +
                             std::to_string(fresh->second));
        }
      }
      // A branch's points up to its branch point are its trunk's: some start of the branch
      // after the fresh rerun took them.
      for (int64_t trunk_run : c.trunk_runs) {
        bool taken = false;
        for (const auto& [id, run] : runs) {
          taken = taken || (run.cell == c.id && run.at_unix_ms >= fresh->second &&
                            run.trunk_run == static_cast<uint64_t>(trunk_run));
        }
        if (!taken) {
          problems.push_back(name + ": keeps points of trunk run " + std::to_string(trunk_run) +
                             ", which no start of the branch after the fresh rerun asked at " +
                             std::to_string(fresh->second) + " took");
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
  // 3: a branch's trainers start from their own checkpoint or their trunk's, never from scratch.
  std::set<std::string> branches;
  for (const auto& [key, c] : cells) {
    if (c.role == "branch") branches.insert(c.id);
  }
  for (const auto& [id, run] : runs) {
    if (branches.count(run.cell) && !run.trunk_run) {
      problems.push_back("cell " + run.cell + ": a trainer of this branch started run " +
                         std::to_string(id) + " from scratch, not from its trunk's checkpoint");
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

  // 7: the trunk checkpoints branches start from are kept.
  if (!input.checkpoint_root.empty()) {
    ForEachRow(
        input.db,
        "SELECT s.name, t.hash, m.tokens, a.attempt FROM metrics m JOIN cells t ON t.id = "
        "m.cell_id JOIN studies s ON s.id = t.study_id JOIN attempts a ON a.id = m.attempt_id "
        "WHERE t.role = 'trunk' AND m.name = 'checkpoint/bytes' AND m.tokens IN (SELECT "
        "b.branch_tokens FROM cells b WHERE b.trunk_id = t.id)",
        [&](sqlite3_stmt* r) {
          const fs::path file = fs::path(input.checkpoint_root) / Text(r, 0) / Text(r, 1) /
                                base::AttemptDirName(sqlite3_column_int(r, 3)) /
                                base::CheckpointFileName(sqlite3_column_int64(r, 2));
          std::error_code ec;
          if (!fs::exists(file, ec)) {
            problems.push_back("trunk " + Text(r, 0) + "/" + Text(r, 1) + ": its checkpoint at " +
                               std::to_string(sqlite3_column_int64(r, 2)) +
                               " tokens, which a branch starts from, is gone: " + file.string());
          }
        },
        &problems);
  }
  return problems;
}

}  // namespace onset::sim
