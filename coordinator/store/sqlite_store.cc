#include "coordinator/store/sqlite_store.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <unordered_map>
#include <utility>

#include <spdlog/spdlog.h>

#include "absl/strings/str_cat.h"
#include "base/metric_names.h"
#include "common/random_id.h"
#include "common/status_macros.h"
#include "common/utf8.h"
#include "coordinator/store/sqlite_rows.h"
#include "coordinator/store/sqlite_studies.h"
#include "coordinator/store/sqlite_trunks.h"
#include "db/instance.h"
#include "db/schema.h"

namespace onset::coordinator {
namespace {

absl::Status CreateParentDirectories(const std::string& path) {
  if (path.empty() || path == ":memory:" || path.rfind("file:", 0) == 0) return absl::OkStatus();
  std::filesystem::path parent = std::filesystem::path(path).parent_path();
  if (parent.empty()) return absl::OkStatus();
  std::error_code ec;
  std::filesystem::create_directories(parent, ec);
  if (ec) {
    return absl::UnavailableError("cannot create directory " + parent.string() + " for database " +
                                  path + ": " + ec.message());
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<SqliteStore>> SqliteStore::Open(const std::string& path,
                                                               const common::Clock& clock,
                                                               RetryPolicy policy,
                                                               const Options& options) {
  ONSET_RETURN_IF_ERROR(CreateParentDirectories(path));
  ONSET_ASSIGN_OR_RETURN(std::unique_ptr<db::Connection> db, db::OpenDatabase(path));
  std::unique_ptr<db::ReadPool> readers;
  const bool in_memory = path == ":memory:" || path.find("mode=memory") != std::string::npos;
  if (!in_memory && options.readers > 0) {
    ONSET_ASSIGN_OR_RETURN(readers, db::ReadPool::Open(path, options.readers));
  }
  ONSET_ASSIGN_OR_RETURN(db::InstanceInfo instance, db::ReadInstance(*db));
  auto writer = std::make_unique<db::WriteQueue>(std::move(db),
                                                 db::WriteQueue::Options{options.max_write_batch});
  std::unique_ptr<SqliteStore> store(
      new SqliteStore(std::move(writer), std::move(readers), clock, policy, options));
  store->AdoptInstance(instance);
  return store;
}

absl::StatusOr<std::unique_ptr<SqliteStore>> SqliteStore::OpenReadOnly(const std::string& path,
                                                                       const common::Clock& clock,
                                                                       const Options& options) {
  if (path.empty() || path == ":memory:" || path.find("mode=memory") != std::string::npos) {
    return absl::InvalidArgumentError("a read-only store needs a database file, not " +
                                      (path.empty() ? std::string("''") : path));
  }
  db::Connection::Options read_only;
  read_only.read_only = true;
  ONSET_ASSIGN_OR_RETURN(std::unique_ptr<db::Connection> versions,
                         db::OpenDatabaseReadOnly(path, read_only));
  ONSET_ASSIGN_OR_RETURN(std::unique_ptr<db::ReadPool> readers,
                         db::ReadPool::Open(path, std::max(1, options.readers), read_only));
  return std::unique_ptr<SqliteStore>(
      new SqliteStore(std::move(readers), std::move(versions), clock, options));
}

absl::Status SqliteStore::ReadOnlyError() const {
  common::MutexLock lock(&versions_mu_);
  return absl::FailedPreconditionError("database " + versions_->path() +
                                       " is open read-only here: changes go through a "
                                       "coordinator serving it");
}

absl::Status SqliteStore::ProbeWrite() {
  if (!writer_) return ReadOnlyError();
  const int64_t now = clock_.WallUnixMs();
  return writer_->Run([now](db::Connection& db) -> absl::Status {
    ONSET_ASSIGN_OR_RETURN(db::Statement upsert,
                           db.Prepare("INSERT INTO liveness (id, at_unix_ms) VALUES (1, ?) "
                                      "ON CONFLICT (id) DO UPDATE SET at_unix_ms = "
                                      "excluded.at_unix_ms"));
    return upsert.BindAll(now).Run();
  });
}

// ----- studies ---------------------------------------------------------------------------------

absl::StatusOr<AddStudyResult> SqliteStore::PreviewStudy(const NewStudy& study) {
  ONSET_RETURN_IF_ERROR(studies::CheckRoles(study.cells));
  // On a reader: a dry run, however large, never holds up a write.
  return Read<AddStudyResult>([&](db::Connection& db) -> absl::StatusOr<AddStudyResult> {
    ONSET_ASSIGN_OR_RETURN(studies::SubmissionWrites writes, studies::PlanWrites(db, study));
    return studies::PreviewResult(db, study, writes, clock_.WallUnixMs());
  });
}

absl::StatusOr<AddStudyResult> SqliteStore::AddStudy(const NewStudy& study) {
  ONSET_RETURN_IF_ERROR(studies::CheckRoles(study.cells));
  if (!writer_) return ReadOnlyError();
  // One submission is written at a time, so that what one planned stays true across its
  // transactions (another would be planned again: ApplyStudy's check).
  common::MutexLock one_at_a_time(&submissions_mu_);
  ONSET_ASSIGN_OR_RETURN(studies::SubmissionWrites writes,
                         Read<studies::SubmissionWrites>(
                             [&](db::Connection& db) { return studies::PlanWrites(db, study); }));
  const int64_t now = clock_.WallUnixMs();
  ONSET_ASSIGN_OR_RETURN(const int64_t study_id, writer_->Run<int64_t>([&](db::Connection& db) {
    return studies::ApplyStudy(db, study, writes, now);
  }));
  // The rest in transactions of kSubmissionRowsPerWrite rows: the lease traffic passes between
  // them. A failure leaves the rows written so far (submitting the file again adds the rest:
  // cells are content-addressed), and says so.
  size_t written = 0;
  auto failed = [&](const absl::Status& s) {
    return absl::Status(s.code(), "study " + study.name + ": stored " + std::to_string(written) +
                                      " of its " + std::to_string(writes.new_cells.size()) +
                                      " new cells, then: " + std::string(s.message()) +
                                      " (submitting the file again adds the rest)");
  };
  for (size_t from = 0; from < writes.relabels.size(); from += kSubmissionRowsPerWrite) {
    const size_t to = std::min(writes.relabels.size(), from + kSubmissionRowsPerWrite);
    const std::vector<std::pair<const CellSpec*, std::string>> chunk(writes.relabels.begin() + from,
                                                                     writes.relabels.begin() + to);
    absl::Status s = writer_->Run(
        [&](db::Connection& db) { return studies::ApplyRelabels(db, study_id, chunk); });
    if (!s.ok()) return failed(s);
  }
  std::vector<const CellSpec*> unlinked;  // branches written before their trunk
  for (size_t from = 0; from < writes.new_cells.size(); from += kSubmissionRowsPerWrite) {
    const size_t to = std::min(writes.new_cells.size(), from + kSubmissionRowsPerWrite);
    const std::vector<const CellSpec*> chunk(writes.new_cells.begin() + from,
                                             writes.new_cells.begin() + to);
    absl::StatusOr<std::vector<const CellSpec*>> waiting =
        writer_->Run<std::vector<const CellSpec*>>([&](db::Connection& db) {
          return studies::ApplyCells(db, study_id, study, chunk, now);
        });
    if (!waiting.ok()) return failed(waiting.status());
    unlinked.insert(unlinked.end(), waiting->begin(), waiting->end());
    written = to;
  }
  for (size_t from = 0; from < unlinked.size(); from += kSubmissionRowsPerWrite) {
    const size_t to = std::min(unlinked.size(), from + kSubmissionRowsPerWrite);
    const std::vector<const CellSpec*> chunk(unlinked.begin() + from, unlinked.begin() + to);
    absl::Status s = writer_->Run(
        [&](db::Connection& db) { return studies::LinkBranches(db, study_id, study.name, chunk); });
    if (!s.ok()) return failed(s);
  }
  return Read<AddStudyResult>([&](db::Connection& db) -> absl::StatusOr<AddStudyResult> {
    AddStudyResult result;
    ONSET_RETURN_IF_ERROR(studies::LoadSubmitted(db, study_id, study, &result));
    result.new_cell_ids = studies::NewCellIds(study, writes);
    result.cells_added = static_cast<int>(result.new_cell_ids.size());
    return result;
  });
}

absl::StatusOr<std::vector<StoredPlanCell>> SqliteStore::PlanCells(const std::string& study) {
  return Read<std::vector<StoredPlanCell>>(
      [&](db::Connection& db) -> absl::StatusOr<std::vector<StoredPlanCell>> {
        absl::StatusOr<int64_t> id = rows::StudyId(db, study);
        if (absl::IsNotFound(id.status())) return std::vector<StoredPlanCell>();
        if (!id.ok()) return id.status();
        return rows::PlanCells(db, *id);
      });
}

db::WriteQueue::Stats SqliteStore::WriterStats() const {
  return writer_ ? writer_->stats() : db::WriteQueue::Stats();
}

absl::StatusOr<StudyListing> SqliteStore::ListStudyPage(const StudyQuery& query) {
  if (query.limit < 1 || query.limit > kMaxStudiesPerRead) {
    return absl::InvalidArgumentError("a listing reads 1 to " + std::to_string(kMaxStudiesPerRead) +
                                      " studies, not " + std::to_string(query.limit));
  }
  return Read<StudyListing>([&](db::Connection& db) -> absl::StatusOr<StudyListing> {
    ONSET_ASSIGN_OR_RETURN(db::Statement stmt,
                           db.Prepare("SELECT id FROM studies WHERE id > ? ORDER BY id LIMIT ?"));
    stmt.BindAll(query.after, int64_t{query.limit});
    std::vector<int64_t> ids;
    while (true) {
      ONSET_ASSIGN_OR_RETURN(bool row, stmt.Step());
      if (!row) break;
      ids.push_back(stmt.Int(0));
    }
    StudyListing page;
    for (int64_t id : ids) {
      ONSET_ASSIGN_OR_RETURN(StudyInfo info, rows::LoadStudy(db, id, /*with_source=*/false));
      page.studies.push_back(std::move(info));
    }
    ONSET_ASSIGN_OR_RETURN(db::Statement more,
                           db.Prepare("SELECT COUNT(*) FROM studies WHERE id > ?"));
    more.BindAll(ids.empty() ? query.after : ids.back());
    ONSET_ASSIGN_OR_RETURN(bool row, more.Step());
    page.more = row ? more.Int(0) : 0;
    return page;
  });
}

absl::StatusOr<StudyDetail> SqliteStore::GetStudy(const std::string& name, const CellPage& page) {
  return Read<StudyDetail>([&](db::Connection& db) -> absl::StatusOr<StudyDetail> {
    ONSET_ASSIGN_OR_RETURN(int64_t id, rows::StudyId(db, name));
    StudyDetail detail;
    ONSET_ASSIGN_OR_RETURN(detail.study, rows::LoadStudy(db, id));
    ONSET_ASSIGN_OR_RETURN(detail.cells, rows::LoadCells(db, id, page, &detail.next_after));
    return detail;
  });
}

absl::StatusOr<std::vector<CellInfo>> SqliteStore::FindCells(const std::string& study,
                                                             const CellFilter& filter) {
  return Read<std::vector<CellInfo>>(
      [&](db::Connection& db) -> absl::StatusOr<std::vector<CellInfo>> {
        ONSET_ASSIGN_OR_RETURN(int64_t id, rows::StudyId(db, study));
        return rows::FindCells(db, id, filter);
      });
}

absl::StatusOr<CellOutputs> SqliteStore::DescribeCell(const std::string& study,
                                                      const std::string& cell_id) {
  return Read<CellOutputs>([&](db::Connection& db) -> absl::StatusOr<CellOutputs> {
    ONSET_ASSIGN_OR_RETURN(int64_t study_id, rows::StudyId(db, study));
    ONSET_ASSIGN_OR_RETURN(std::vector<CellInfo> found,
                           rows::FindCells(db, study_id, CellFilter{false, {cell_id}}));
    if (found.empty()) {
      return absl::NotFoundError(absl::StrCat("study ", study, " has no cell ", cell_id));
    }
    ONSET_ASSIGN_OR_RETURN(
        db::Statement stmt,
        db.Prepare("SELECT id, config_json FROM cells WHERE study_id = ?1 AND hash = ?2"));
    stmt.BindAll(study_id, cell_id);
    ONSET_ASSIGN_OR_RETURN(bool row, stmt.Step());
    if (!row) return absl::NotFoundError(absl::StrCat("study ", study, " has no cell ", cell_id));
    CellOutputs out;
    out.cell = std::move(found.front());
    out.config_json = stmt.Text(1);
    const int64_t cell_row = stmt.Int(0);
    ONSET_ASSIGN_OR_RETURN(out.checkpoints,
                           rows::ResumePoints(db, cell_row, kMaxDescribedCheckpoints));
    ONSET_ASSIGN_OR_RETURN(
        db::Statement exports,
        db.Prepare("SELECT format, host, path, bytes, tokens, at_unix_ms FROM cell_exports "
                   "WHERE cell_id = ?1 ORDER BY id DESC LIMIT ?2"));
    exports.BindAll(cell_row, kMaxCellExports);
    while (true) {
      ONSET_ASSIGN_OR_RETURN(bool more, exports.Step());
      if (!more) break;
      out.exports.push_back({exports.Text(0), exports.Text(1), exports.Text(2), exports.Int(3),
                             exports.Int(4), exports.Int(5)});
    }
    return out;
  });
}

absl::Status SqliteStore::RecordExport(const std::string& study, const std::string& cell_id,
                                       const CellExport& exported) {
  if (!writer_) return ReadOnlyError();
  const int64_t now = clock_.WallUnixMs();
  return writer_->Run([&](db::Connection& db) -> absl::Status {
    ONSET_ASSIGN_OR_RETURN(int64_t study_id, rows::StudyId(db, study));
    ONSET_ASSIGN_OR_RETURN(db::Statement find,
                           db.Prepare("SELECT id FROM cells WHERE study_id = ?1 AND hash = ?2"));
    find.BindAll(study_id, cell_id);
    ONSET_ASSIGN_OR_RETURN(bool found, find.Step());
    if (!found) return absl::NotFoundError(absl::StrCat("study ", study, " has no cell ", cell_id));
    const int64_t cell_row = find.Int(0);
    ONSET_ASSIGN_OR_RETURN(
        db::Statement insert,
        db.Prepare("INSERT INTO cell_exports (cell_id, format, host, path, bytes, tokens, "
                   "at_unix_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"));
    ONSET_RETURN_IF_ERROR(insert
                              .BindAll(cell_row, exported.format, exported.host, exported.path,
                                       exported.bytes, exported.tokens, now)
                              .Run());
    // The newest kMaxCellExports stay.
    ONSET_ASSIGN_OR_RETURN(
        db::Statement trim,
        db.Prepare("DELETE FROM cell_exports WHERE cell_id = ?1 AND id NOT IN (SELECT id FROM "
                   "cell_exports WHERE cell_id = ?1 ORDER BY id DESC LIMIT ?2)"));
    return trim.BindAll(cell_row, kMaxCellExports).Run();
  });
}

absl::Status SqliteStore::MakeRoomForAWorker(db::Connection& db, int64_t now) {
  ONSET_ASSIGN_OR_RETURN(db::Statement count, db.Prepare("SELECT count(*) FROM workers"));
  ONSET_ASSIGN_OR_RETURN(bool row, count.Step());
  const int64_t workers = row ? count.Int(0) : 0;
  if (workers < max_workers_) return absl::OkStatus();
  // Forget more than the one row needed (up to 1,000), so that a burst of registrations at the
  // limit does not count and search the table for each one.
  const int64_t forget =
      std::min<int64_t>(std::max<int64_t>(workers - max_workers_ + 1, 1000), workers);
  ONSET_ASSIGN_OR_RETURN(db::Statement stale,
                         db.Prepare("DELETE FROM workers WHERE id IN (SELECT w.id FROM workers w "
                                    "WHERE w.last_seen_at < ?1 AND NOT EXISTS "
                                    "(SELECT 1 FROM attempts a WHERE a.worker_id = w.id) "
                                    "ORDER BY w.last_seen_at, w.id LIMIT ?2)"));
  stale.BindAll(now - forget_workers_after_.count(), forget);
  ONSET_RETURN_IF_ERROR(stale.Run());
  const int64_t forgotten = db.Changes();
  if (forgotten > 0) {
    spdlog::info(
        "{} workers registered: forgot the {} seen least recently that ran nothing and "
        "were last seen over {} s ago",
        workers, forgotten, forget_workers_after_.count() / 1000);
  }
  if (workers - forgotten < max_workers_) return absl::OkStatus();
  return absl::ResourceExhaustedError(absl::StrCat(
      "onsetd keeps at most ", max_workers_,
      " workers and every one of them has run an attempt or was seen within the last ",
      forget_workers_after_.count() / 1000,
      " s; registrations resume once workers that ran nothing have been silent that long"));
}

absl::StatusOr<WorkerPage> SqliteStore::ListWorkers(const WorkerQuery& query) {
  return Read<WorkerPage>([&](db::Connection& db) -> absl::StatusOr<WorkerPage> {
    const int limit = std::clamp(query.limit, 1, kMaxWorkersPerPage);
    const bool live = query.live_since_unix_ms > 0;
    // Live: not exited and seen since; walked by workers_by_last_seen from the newest.
    const std::string selects = live ? "exited_at IS NULL AND last_seen_at >= ?1" : "?1 = ?1";
    WorkerPage page;
    // (last_seen_at DESC, id): the page after the cursor.
    const std::string after =
        " AND (?2 = 0 OR last_seen_at < ?3 OR (last_seen_at = ?3 AND id > ?4))";
    ONSET_ASSIGN_OR_RETURN(db::Statement count,
                           db.Prepare("SELECT (SELECT COUNT(*) FROM workers WHERE " + selects +
                                      after + "), (SELECT COUNT(*) FROM workers WHERE " + selects +
                                      "), (SELECT COUNT(*) FROM workers)"));
    count.BindAll(query.live_since_unix_ms, query.after ? 1 : 0,
                  query.after ? query.after->first : 0,
                  query.after ? query.after->second : std::string());
    ONSET_ASSIGN_OR_RETURN(bool counted, count.Step());
    if (counted) {
      page.matching = count.Int(0);
      page.not_live = live ? count.Int(2) - count.Int(1) : 0;
    }
    // One more than asked, to know whether another page follows.
    ONSET_ASSIGN_OR_RETURN(
        db::Statement stmt,
        db.Prepare("SELECT id, host, slots, version, registered_at, last_seen_at, devices, "
                   "slurm_job, COALESCE(exited_at, 0) FROM workers WHERE " +
                   selects + after + " ORDER BY last_seen_at DESC, id LIMIT ?5"));
    stmt.BindAll(query.live_since_unix_ms, query.after ? 1 : 0,
                 query.after ? query.after->first : 0,
                 query.after ? query.after->second : std::string(), limit + 1);
    std::unordered_map<std::string, size_t> index;
    while (true) {
      ONSET_ASSIGN_OR_RETURN(bool row, stmt.Step());
      if (!row) break;
      if (static_cast<int>(page.workers.size()) == limit) {
        const WorkerInfo& last = page.workers.back();
        page.next = std::make_pair(last.last_seen_unix_ms, last.id);
        break;
      }
      index[stmt.Text(0)] = page.workers.size();
      WorkerInfo& w = page.workers.emplace_back();
      w.id = stmt.Text(0);
      w.host = stmt.Text(1);
      w.slots = static_cast<int>(stmt.Int(2));
      w.version = stmt.Text(3);
      w.registered_unix_ms = stmt.Int(4);
      w.last_seen_unix_ms = stmt.Int(5);
      w.devices = rows::SplitDevices(stmt.Text(6));
      w.slurm_job = stmt.Text(7);
      w.exited_unix_ms = stmt.Int(8);
    }
    // The page's running attempts, by attempts_by_worker, never the whole table.
    ONSET_ASSIGN_OR_RETURN(
        db::Statement running,
        db.Prepare("SELECT s.name, c.hash, a.attempt, a.devices FROM attempts a "
                   "JOIN cells c ON c.id = a.cell_id JOIN studies s ON s.id = c.study_id "
                   "WHERE a.worker_id = ? AND a.ended_at IS NULL ORDER BY a.id"));
    for (WorkerInfo& w : page.workers) {
      running.Reset();
      running.BindAll(w.id);
      while (true) {
        ONSET_ASSIGN_OR_RETURN(bool row, running.Step());
        if (!row) break;
        // The lease id proves who holds a job: it never leaves the coordinator in a listing.
        w.running.push_back(RunningAttempt{"", w.id, running.Text(0), running.Text(1),
                                           static_cast<int>(running.Int(2)),
                                           rows::SplitDevices(running.Text(3))});
      }
    }
    return page;
  });
}

absl::StatusOr<ResultPage> SqliteStore::Results(const std::string& study, const CellPage& page) {
  return Read<ResultPage>([&](db::Connection& db) -> absl::StatusOr<ResultPage> {
    ONSET_ASSIGN_OR_RETURN(int64_t study_id, rows::StudyId(db, study));
    ResultPage out;
    // Trunks are jobs, not grid points: they have no result.
    ONSET_ASSIGN_OR_RETURN(
        std::vector<CellInfo> cells,
        rows::LoadCells(db, study_id, page, &out.next_after, /*without_trunks=*/true));
    std::unordered_map<std::string, size_t> index;
    for (CellInfo& cell : cells) {
      index[cell.id] = out.results.size();
      out.results.push_back(CellResult{std::move(cell), {}});
    }
    // The page's cells are those of the study with queue positions in (page.after, last]; the
    // metrics are read for that range only. With a bare MAX(), SQLite takes the other columns
    // from the row holding the maximum.
    ONSET_ASSIGN_OR_RETURN(
        db::Statement stmt,
        db.Prepare("SELECT c.hash, m.name, m.value, MAX(m.tokens) FROM metrics m "
                   "JOIN cells c ON c.id = m.cell_id WHERE c.study_id = ? AND c.id > ? "
                   "AND c.id <= ? AND c.role <> 'trunk' GROUP BY m.cell_id, m.name"));
    stmt.BindAll(study_id, page.after,
                 out.next_after > 0 ? out.next_after : std::numeric_limits<int64_t>::max());
    // An evaluation reports its metrics together, but not always the same ones (no
    // retrieval-head score without a right answer, the ablation only at the end): a metric the
    // cell's last evaluation did not report is left out rather than shown stale.
    std::vector<std::unordered_map<std::string, std::pair<int64_t, double>>> last(
        out.results.size());
    std::vector<int64_t> last_eval(out.results.size(), -1);
    while (true) {
      ONSET_ASSIGN_OR_RETURN(bool row, stmt.Step());
      if (!row) break;
      auto it = index.find(stmt.Text(0));
      if (it == index.end()) continue;
      const std::string name = stmt.Text(1);
      const int64_t tokens = stmt.Int(3);
      last[it->second][name] = {
          tokens, stmt.IsNull(2) ? std::numeric_limits<double>::quiet_NaN() : stmt.Double(2)};
      if (metric::IsEvaluationMetric(name))
        last_eval[it->second] = std::max(last_eval[it->second], tokens);
    }
    for (size_t i = 0; i < out.results.size(); ++i) {
      for (const auto& [name, point] : last[i]) {
        if (metric::IsEvaluationMetric(name) && point.first < last_eval[i]) continue;
        out.results[i].final_metrics[name] = point.second;
      }
    }
    return out;
  });
}

}  // namespace onset::coordinator
