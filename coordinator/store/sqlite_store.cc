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
#include "coordinator/cells/cell_transitions.h"
#include "coordinator/store/sqlite_rows.h"
#include "coordinator/store/sqlite_studies.h"
#include "coordinator/store/sqlite_trunks.h"
#include "db/schema.h"

namespace onset::coordinator {
namespace {

constexpr int kLeaseIdBytes = 16;
constexpr int kWorkerIdBytes = 8;
// Stored text is capped so one chatty failure cannot bloat the database.
constexpr size_t kMaxReasonBytes = 4 * 1024;
constexpr size_t kMaxStderrTailBytes = 64 * 1024;

// The running attempt a lease names.
struct OpenAttempt {
  int64_t id;
  int64_t cell_id;
  std::string worker_id;
  CellState cell_state;
  int failures;  // the cell's counted failures so far
  CellRole role;
  std::string cell_hash;
  int64_t tokens_done;
  int64_t tokens_budget;
};

absl::StatusOr<OpenAttempt> FindOpenAttempt(db::Connection& db, const std::string& lease_id) {
  ONSET_ASSIGN_OR_RETURN(
      db::Statement stmt,
      db.Prepare("SELECT a.id, a.cell_id, a.worker_id, c.state, c.failures, c.role, c.hash, "
                 "c.tokens_done, c.tokens_budget FROM attempts a JOIN cells c ON c.id = a.cell_id "
                 "WHERE a.lease_id = ? AND a.ended_at IS NULL"));
  stmt.BindAll(lease_id);
  ONSET_ASSIGN_OR_RETURN(bool row, stmt.Step());
  if (!row) {
    return absl::FailedPreconditionError("lease " + lease_id +
                                         " is unknown or its attempt has ended");
  }
  return OpenAttempt{stmt.Int(0),
                     stmt.Int(1),
                     stmt.Text(2),
                     CellStateFromName(stmt.Text(3)).value_or(CellState::kRunning),
                     static_cast<int>(stmt.Int(4)),
                     wire::RoleFromName(stmt.Text(5)).value_or(CellRole::kCell),
                     stmt.Text(6),
                     stmt.Int(7),
                     stmt.Int(8)};
}

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
  auto writer = std::make_unique<db::WriteQueue>(std::move(db),
                                                 db::WriteQueue::Options{options.max_write_batch});
  return std::unique_ptr<SqliteStore>(
      new SqliteStore(std::move(writer), std::move(readers), clock, policy, options));
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

// ----- studies ---------------------------------------------------------------------------------

absl::StatusOr<AddStudyResult> SqliteStore::AddStudy(const NewStudy& study) {
  return AddOrPreviewStudy(study, /*write=*/true);
}

absl::StatusOr<AddStudyResult> SqliteStore::PreviewStudy(const NewStudy& study) {
  return AddOrPreviewStudy(study, /*write=*/false);
}

absl::StatusOr<AddStudyResult> SqliteStore::AddOrPreviewStudy(const NewStudy& study, bool write) {
  ONSET_RETURN_IF_ERROR(studies::CheckRoles(study.cells));
  auto op = [&](db::Connection& db) -> absl::StatusOr<AddStudyResult> {
    const int64_t now = clock_.WallUnixMs();
    ONSET_RETURN_IF_ERROR(studies::CheckPlanHolds(db, study));
    studies::StoredCells stored;
    ONSET_ASSIGN_OR_RETURN(const int64_t study_id, studies::UpsertStudy(db, study, now, &stored));
    AddStudyResult result;
    ONSET_ASSIGN_OR_RETURN(std::vector<const CellSpec*> new_branches,
                           studies::WriteCells(db, study_id, study, now, &stored, &result));
    ONSET_RETURN_IF_ERROR(studies::LinkBranches(db, study_id, study.name, new_branches));
    ONSET_RETURN_IF_ERROR(studies::LoadSubmitted(db, study_id, study, &result));
    return result;
  };
  if (!writer_) return ReadOnlyError();
  return writer_->Run<AddStudyResult>(op, /*roll_back=*/!write);
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

absl::StatusOr<std::vector<StudyInfo>> SqliteStore::ListStudies() {
  return Read<std::vector<StudyInfo>>(
      [&](db::Connection& db) -> absl::StatusOr<std::vector<StudyInfo>> {
        ONSET_ASSIGN_OR_RETURN(db::Statement stmt,
                               db.Prepare("SELECT id FROM studies ORDER BY id"));
        std::vector<int64_t> ids;
        while (true) {
          ONSET_ASSIGN_OR_RETURN(bool row, stmt.Step());
          if (!row) break;
          ids.push_back(stmt.Int(0));
        }
        std::vector<StudyInfo> studies;
        for (int64_t id : ids) {
          ONSET_ASSIGN_OR_RETURN(StudyInfo info, rows::LoadStudy(db, id));
          studies.push_back(std::move(info));
        }
        return studies;
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

absl::StatusOr<std::string> SqliteStore::RegisterWorker(const WorkerRegistration& worker) {
  ONSET_RETURN_IF_ERROR(CheckDeviceNames(worker.devices, "devices"));
  ONSET_RETURN_IF_ERROR(CheckSlurmJob(worker.slurm_job, "slurm_job"));
  return Write<std::string>([&](db::Connection& db) -> absl::StatusOr<std::string> {
    const int64_t now = clock_.WallUnixMs();
    ONSET_RETURN_IF_ERROR(MakeRoomForAWorker(db, now));
    const std::string id = "w-" + common::RandomHex(kWorkerIdBytes);
    ONSET_ASSIGN_OR_RETURN(
        db::Statement stmt,
        db.Prepare("INSERT INTO workers (id, host, slots, version, registered_at, last_seen_at, "
                   "devices, slurm_job) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"));
    stmt.BindAll(id, worker.host, worker.slots, worker.version, now, now,
                 rows::JoinDevices(worker.devices), worker.slurm_job);
    ONSET_RETURN_IF_ERROR(stmt.Run());
    return id;
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

absl::StatusOr<std::vector<WorkerInfo>> SqliteStore::ListWorkers() {
  return Read<std::vector<WorkerInfo>>(
      [&](db::Connection& db) -> absl::StatusOr<std::vector<WorkerInfo>> {
        ONSET_ASSIGN_OR_RETURN(
            db::Statement stmt,
            db.Prepare("SELECT id, host, slots, version, registered_at, last_seen_at, devices, "
                       "slurm_job, COALESCE(exited_at, 0) FROM workers "
                       "ORDER BY last_seen_at DESC, id"));
        std::vector<WorkerInfo> workers;
        std::unordered_map<std::string, size_t> index;
        while (true) {
          ONSET_ASSIGN_OR_RETURN(bool row, stmt.Step());
          if (!row) break;
          index[stmt.Text(0)] = workers.size();
          WorkerInfo& w = workers.emplace_back();
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
        ONSET_ASSIGN_OR_RETURN(
            db::Statement running,
            db.Prepare(
                "SELECT a.lease_id, a.worker_id, s.name, c.hash, a.attempt, a.devices "
                "FROM attempts a JOIN cells c ON c.id = a.cell_id "
                "JOIN studies s ON s.id = c.study_id WHERE a.ended_at IS NULL ORDER BY a.id"));
        while (true) {
          ONSET_ASSIGN_OR_RETURN(bool row, running.Step());
          if (!row) break;
          auto it = index.find(running.Text(1));
          if (it == index.end()) continue;
          // The lease id proves who holds a job: it never leaves the coordinator in a listing.
          workers[it->second].running.push_back(RunningAttempt{
              "", running.Text(1), running.Text(2), running.Text(3),
              static_cast<int>(running.Int(4)), rows::SplitDevices(running.Text(5))});
        }
        return workers;
      });
}

absl::Status SqliteStore::DeregisterWorker(const std::string& worker_id) {
  if (!writer_) return ReadOnlyError();
  return writer_->Run([&](db::Connection& db) -> absl::Status {
    ONSET_ASSIGN_OR_RETURN(
        db::Statement exit,
        db.Prepare("UPDATE workers SET exited_at = COALESCE(exited_at, ?1), last_seen_at = ?1 "
                   "WHERE id = ?2 RETURNING id"));
    exit.BindAll(clock_.WallUnixMs(), worker_id);
    ONSET_ASSIGN_OR_RETURN(bool found, exit.Step());
    if (!found) return absl::NotFoundError("worker '" + worker_id + "' is not registered");
    return exit.Run();
  });
}

absl::StatusOr<std::optional<ClaimedJob>> SqliteStore::ClaimNextCell(
    const std::string& worker_id, const std::vector<std::string>& free_devices) {
  if (free_devices.empty()) {
    return absl::InvalidArgumentError("free_devices: a worker leases only with a free device");
  }
  ONSET_RETURN_IF_ERROR(CheckDeviceNames(free_devices, "free_devices"));
  return Write<std::optional<ClaimedJob>>([&](db::Connection& db)
                                              -> absl::StatusOr<std::optional<ClaimedJob>> {
    const int64_t now = clock_.WallUnixMs();

    ONSET_ASSIGN_OR_RETURN(
        db::Statement seen,
        db.Prepare("UPDATE workers SET last_seen_at = ? WHERE id = ? RETURNING devices"));
    seen.BindAll(now, worker_id);
    ONSET_ASSIGN_OR_RETURN(bool registered, seen.Step());
    if (!registered) {
      return absl::FailedPreconditionError("worker '" + worker_id +
                                           "' is not registered; register again");
    }
    const std::vector<std::string> own = rows::SplitDevices(seen.Text(0));
    ONSET_RETURN_IF_ERROR(seen.Run());
    for (const std::string& d : free_devices) {
      if (!own.empty() && std::find(own.begin(), own.end(), d) == own.end()) {
        return absl::InvalidArgumentError("free_devices: " + d + " is not a device of worker " +
                                          worker_id + " (" + rows::JoinDevices(own) + ")");
      }
    }

    // The claim rule (coordinator/cells/claim_rule.h: NextClaim) as an indexed query: the first
    // cell in queue order that is queued, or done waiting out its backoff, needs no more devices
    // than are free and is ready (a WSD branch whose trunk reported its checkpoint). A bigger
    // cell ahead waits for a worker with room, and a branch for its trunk, without holding up
    // the cells behind it. claim_rule_agreement_test checks this query against the rule. The
    // write transaction (BEGIN IMMEDIATE) holds the database's write lock, so no one claims it
    // in between.
    const std::string claimable = trunks::ClaimableRoleSql("q");
    ONSET_ASSIGN_OR_RETURN(
        db::Statement pick,
        // The first fitting queued cell and the first fitting backoff cell that is due, each
        // found by walking cells_by_state (state, id) from its start, then the earlier of the
        // two: an OR of the two states would sort every queued cell on each lease.
        db.Prepare("SELECT c.id, c.hash, c.config_json, c.tokens_budget, s.name, c.fresh, "
                   "c.devices, c.role, COALESCE(t.hash, ''), c.branch_tokens "
                   "FROM cells c JOIN studies s ON s.id = c.study_id "
                   "LEFT JOIN cells t ON t.id = c.trunk_id WHERE c.id IN ("
                   "SELECT id FROM (SELECT q.id FROM cells q WHERE q.state = 'queued' "
                   "AND q.devices <= ?2 AND " +
                   claimable +
                   " ORDER BY q.id LIMIT 1) UNION ALL "
                   "SELECT id FROM (SELECT q.id FROM cells q WHERE q.state = 'backoff' "
                   "AND q.retry_at <= ?1 AND q.devices <= ?2 AND " +
                   claimable + " ORDER BY q.id LIMIT 1)) ORDER BY c.id LIMIT 1"));
    pick.BindAll(now, static_cast<int64_t>(free_devices.size()));
    ONSET_ASSIGN_OR_RETURN(bool row, pick.Step());
    if (!row) {
      return std::optional<ClaimedJob>();
    }
    const int64_t cell_row = pick.Int(0);
    ClaimedJob job;
    job.worker_id = worker_id;
    job.cell_id = pick.Text(1);
    job.config_json = pick.Text(2);
    job.tokens_budget = pick.Int(3);
    job.study = pick.Text(4);
    job.fresh = pick.Int(5) != 0;  // handed to this attempt only
    job.devices.assign(free_devices.begin(), free_devices.begin() + pick.Int(6));
    job.role = wire::RoleFromName(pick.Text(7)).value_or(CellRole::kCell);
    job.trunk_id = pick.Text(8);
    job.branch_tokens = pick.Int(9);
    job.lease_id = common::RandomHex(kLeaseIdBytes);
    ONSET_RETURN_IF_ERROR(pick.Run());
    ONSET_ASSIGN_OR_RETURN(
        db::Statement insert,
        db.Prepare("INSERT INTO attempts (cell_id, attempt, worker_id, lease_id, started_at, "
                   "devices) VALUES (?1, (SELECT COALESCE(MAX(attempt), 0) + 1 FROM attempts "
                   "WHERE cell_id = ?1), ?2, ?3, ?4, ?5) RETURNING attempt"));
    insert.BindAll(cell_row, worker_id, job.lease_id, now, rows::JoinDevices(job.devices));
    ONSET_ASSIGN_OR_RETURN(bool inserted, insert.Step());
    if (!inserted) return absl::InternalError("INSERT INTO attempts returned no row");
    job.attempt = static_cast<int>(insert.Int(0));
    ONSET_RETURN_IF_ERROR(insert.Run());
    // After the attempt exists, so that the state change's event names it.
    ONSET_ASSIGN_OR_RETURN(
        db::Statement claim,
        db.Prepare("UPDATE cells SET state = 'running', updated_at = ?, fresh = 0 WHERE id = ?"));
    claim.BindAll(now, cell_row);
    ONSET_RETURN_IF_ERROR(claim.Run());
    return std::optional<ClaimedJob>(std::move(job));
  });
}

absl::StatusOr<int> SqliteStore::CountWaitingCells(const std::string& worker_id) {
  return Read<int>([&](db::Connection& db) -> absl::StatusOr<int> {
    // Each state walked in cells_by_state, as ClaimNextCell does; the LIMIT bounds the work once
    // enough are found. An unknown worker has no slots (NULL): nothing fits.
    ONSET_ASSIGN_OR_RETURN(
        db::Statement count,
        db.Prepare("SELECT COUNT(*) FROM (SELECT 1 FROM cells c WHERE c.state IN ('queued', "
                   "'backoff') AND c.devices <= (SELECT w.slots FROM workers w WHERE w.id = ?1) "
                   "LIMIT ?2)"));
    count.BindAll(worker_id, static_cast<int64_t>(kMaxCountedWaitingCells));
    ONSET_ASSIGN_OR_RETURN(bool row, count.Step());
    if (!row) return absl::InternalError("SELECT COUNT(*) returned no row");
    return static_cast<int>(count.Int(0));
  });
}

absl::StatusOr<LeaseStatus> SqliteStore::RecordProgress(const std::string& lease_id,
                                                        std::optional<int64_t> tokens_done,
                                                        double tokens_per_second) {
  return Write<LeaseStatus>([&](db::Connection& db) -> absl::StatusOr<LeaseStatus> {
    const int64_t now = clock_.WallUnixMs();
    ONSET_ASSIGN_OR_RETURN(OpenAttempt attempt, FindOpenAttempt(db, lease_id));
    ONSET_ASSIGN_OR_RETURN(db::Statement cell,
                           db.Prepare("UPDATE cells SET tokens_done = COALESCE(?, tokens_done), "
                                      "tokens_per_second = ?, updated_at = ? WHERE id = ?"));
    cell.BindAll(tokens_done, std::isfinite(tokens_per_second) ? tokens_per_second : 0.0, now,
                 attempt.cell_id);
    ONSET_RETURN_IF_ERROR(cell.Run());
    ONSET_ASSIGN_OR_RETURN(db::Statement worker,
                           db.Prepare("UPDATE workers SET last_seen_at = ? WHERE id = ?"));
    worker.BindAll(now, attempt.worker_id);
    ONSET_RETURN_IF_ERROR(worker.Run());
    return LeaseStatus{attempt.cell_state == CellState::kCancelled};
  });
}

absl::StatusOr<int> SqliteStore::AddMetrics(const std::string& lease_id,
                                            const std::vector<MetricPoint>& points) {
  for (const MetricPoint& p : points) {
    if (p.name.empty()) return absl::InvalidArgumentError("a metric point has an empty name");
    if (p.tokens < 0) {
      return absl::InvalidArgumentError("metric " + p.name + " has negative tokens " +
                                        std::to_string(p.tokens));
    }
  }
  return Write<int>([&](db::Connection& db) -> absl::StatusOr<int> {
    const int64_t now = clock_.WallUnixMs();
    ONSET_ASSIGN_OR_RETURN(OpenAttempt attempt, FindOpenAttempt(db, lease_id));
    ONSET_ASSIGN_OR_RETURN(
        db::Statement upsert,
        db.Prepare("INSERT INTO metrics (cell_id, name, tokens, value, attempt_id) "
                   "VALUES (?, ?, ?, ?, ?) ON CONFLICT (cell_id, name, tokens) "
                   "DO UPDATE SET value = excluded.value, attempt_id = excluded.attempt_id"));
    bool has_loss = false;
    for (const MetricPoint& p : points) {
      upsert.Reset();
      upsert.BindAll(attempt.cell_id, p.name, p.tokens, p.value, attempt.id);
      ONSET_RETURN_IF_ERROR(upsert.Run());
      has_loss = has_loss || p.name == metric::kTrainLoss;
      if (attempt.role == CellRole::kTrunk && p.name == trunks::kCheckpointMetric) {
        ONSET_RETURN_IF_ERROR(trunks::MarkBranchesReady(db, attempt.cell_id, p.tokens));
      }
    }
    if (has_loss) {
      ONSET_ASSIGN_OR_RETURN(
          db::Statement loss,
          db.Prepare("UPDATE cells SET updated_at = ?2, latest_loss = (SELECT value FROM metrics "
                     "WHERE cell_id = ?1 AND name = ?3 ORDER BY tokens DESC LIMIT 1) "
                     "WHERE id = ?1"));
      loss.BindAll(attempt.cell_id, now, std::string(metric::kTrainLoss));
      ONSET_RETURN_IF_ERROR(loss.Run());
    }
    return static_cast<int>(points.size());
  });
}

absl::Status SqliteStore::EndAttempt(db::Connection& db, const std::string& lease_id,
                                     const AttemptEnd& end, bool lost) {
  const int64_t now = clock_.WallUnixMs();
  ONSET_ASSIGN_OR_RETURN(OpenAttempt attempt, FindOpenAttempt(db, lease_id));

  // A trunk is done when its checkpoint at its budget (where its last branch starts) is written.
  // Without it, a trunk extended while it ran trains on; any other is a failed attempt.
  AttemptEnd checked = end;
  bool extended = false;
  if (!lost && attempt.role == CellRole::kTrunk && end.outcome == AttemptOutcome::kSucceeded) {
    ONSET_ASSIGN_OR_RETURN(bool done,
                           trunks::HasCheckpointPoint(db, attempt.cell_id, attempt.tokens_budget));
    if (!done && attempt.tokens_done < attempt.tokens_budget) {
      extended = true;
    } else if (!done) {
      checked.outcome = AttemptOutcome::kFailed;
      checked.reason = trunks::MissingCheckpointReason(attempt.tokens_budget);
    }
  }

  // The attempt's outcome and the cell's next state (cell_transitions.h).
  AttemptEndInput in;
  in.cell_state = attempt.cell_state;
  in.failures = attempt.failures;
  in.end = checked;
  in.lost = lost;
  in.policy = policy_;
  in.now_unix_ms = now;
  CellTransition t = TransitionAtAttemptEnd(in);
  if (extended) {
    // The attempt did what it was given; the trunk is not done (nor, when cancelled, saved by it).
    t.next =
        attempt.cell_state == CellState::kCancelled ? CellState::kCancelled : CellState::kQueued;
  }

  ONSET_ASSIGN_OR_RETURN(
      db::Statement update,
      db.Prepare("UPDATE attempts SET ended_at = ?, outcome = ?, exit_code = ?, signal = ?, "
                 "reason = ?, stderr_tail = ?, failure_class = ? WHERE id = ?"));
  update.BindAll(now, t.outcome, end.exit_code, end.signal,
                 std::string(common::TailUtf8(t.reason, kMaxReasonBytes)),
                 std::string(common::TailUtf8(end.stderr_tail, kMaxStderrTailBytes)),
                 FailureClassName(t.failure), attempt.id);
  ONSET_RETURN_IF_ERROR(update.Run());
  ONSET_ASSIGN_OR_RETURN(
      db::Statement cell,
      db.Prepare("UPDATE cells SET state = ?, updated_at = ?, failures = ?, retry_at = ? "
                 "WHERE id = ?"));
  cell.BindAll(CellStateName(t.next), now, t.failures, t.retry_at_unix_ms, attempt.cell_id);
  ONSET_RETURN_IF_ERROR(cell.Run());
  if (t.next == CellState::kSucceeded) {
    // Progress comes with heartbeats, every few seconds, and a short run (a WSD branch) may end
    // before its first: a success shows the furthest point its trainer reported (the "done"
    // event carries the final token count), never less than the last heartbeat said.
    ONSET_ASSIGN_OR_RETURN(
        db::Statement done,
        db.Prepare("UPDATE cells SET tokens_done = MAX(tokens_done, (SELECT COALESCE(MAX(tokens), "
                   "0) FROM metrics WHERE cell_id = ?1)) WHERE id = ?1"));
    done.BindAll(attempt.cell_id);
    ONSET_RETURN_IF_ERROR(done.Run());
  }
  if (attempt.role == CellRole::kTrunk &&
      (t.next == CellState::kFailed || t.next == CellState::kDiverged ||
       t.next == CellState::kCancelled)) {
    ONSET_RETURN_IF_ERROR(
        trunks::EndWaitingBranches(db, attempt.cell_id, attempt.cell_hash, t.next, t.reason, now)
            .status());
  }
  return absl::OkStatus();
}

absl::Status SqliteStore::FinishAttempt(const std::string& lease_id, const AttemptEnd& end) {
  if (!writer_) return ReadOnlyError();
  return writer_->Run(
      [&](db::Connection& db) { return EndAttempt(db, lease_id, end, /*lost=*/false); });
}

absl::Status SqliteStore::RequeueAttempt(const std::string& lease_id, const std::string& reason) {
  if (!writer_) return ReadOnlyError();
  AttemptEnd end;
  end.reason = reason;
  return writer_->Run(
      [&](db::Connection& db) { return EndAttempt(db, lease_id, end, /*lost=*/true); });
}

absl::StatusOr<int> SqliteStore::CancelCells(const std::string& study,
                                             const std::vector<std::string>& cell_ids) {
  return Write<int>([&](db::Connection& db) -> absl::StatusOr<int> {
    const int64_t now = clock_.WallUnixMs();
    ONSET_ASSIGN_OR_RETURN(int64_t study_id, rows::StudyId(db, study));
    // Each named cell is one lookup and one update by its row (ids named twice count once), so
    // the work grows with the request, never with the study.
    ONSET_ASSIGN_OR_RETURN(std::vector<int64_t> rows, rows::CellRows(db, study_id, cell_ids));
    // Trunks cancelled before they run end for good now (a running one when its attempt ends,
    // since its success would still win): their waiting branches end with them.
    const char* kWhole = "study_id = ?2";
    const char* kOne = "id = ?2";
    auto trunks_sql = [](const char* where) {
      return std::string("SELECT id, hash FROM cells WHERE ") + where +
             " AND role = 'trunk' AND state IN ('queued', 'backoff')";
    };
    auto cancel_sql = [](const char* where) {
      return std::string("UPDATE cells SET state = 'cancelled', updated_at = ?1 WHERE ") + where +
             " AND state IN ('queued', 'backoff', 'running')";
    };
    const bool whole = rows.empty();
    ONSET_ASSIGN_OR_RETURN(db::Statement trunks_ending,
                           db.Prepare(trunks_sql(whole ? kWhole : kOne)));
    ONSET_ASSIGN_OR_RETURN(db::Statement cancel, db.Prepare(cancel_sql(whole ? kWhole : kOne)));
    std::vector<std::pair<int64_t, std::string>> ending;
    int cancelled = 0;
    auto cancel_rows = [&](int64_t key) -> absl::Status {
      trunks_ending.Reset();
      trunks_ending.BindAll(now, key);
      while (true) {
        ONSET_ASSIGN_OR_RETURN(bool found, trunks_ending.Step());
        if (!found) break;
        ending.emplace_back(trunks_ending.Int(0), trunks_ending.Text(1));
      }
      cancel.Reset();
      cancel.BindAll(now, key);
      ONSET_RETURN_IF_ERROR(cancel.Run());
      cancelled += static_cast<int>(db.Changes());
      return absl::OkStatus();
    };
    if (whole) ONSET_RETURN_IF_ERROR(cancel_rows(study_id));
    for (int64_t row : rows) ONSET_RETURN_IF_ERROR(cancel_rows(row));
    for (const auto& [row, hash] : ending) {
      ONSET_RETURN_IF_ERROR(
          trunks::EndWaitingBranches(db, row, hash, CellState::kCancelled, "", now).status());
    }
    return cancelled;
  });
}

absl::StatusOr<int> SqliteStore::RerunCells(const RerunRequest& request) {
  return Write<int>([&](db::Connection& db) -> absl::StatusOr<int> {
    const int64_t now = clock_.WallUnixMs();
    ONSET_ASSIGN_OR_RETURN(int64_t study_id, rows::StudyId(db, request.study));
    ONSET_ASSIGN_OR_RETURN(std::vector<int64_t> only,
                           rows::CellRows(db, study_id, request.cell_ids));
    const std::set<int64_t> only_set(only.begin(), only.end());
    std::set<std::string> states;
    for (CellState s : request.states) states.insert(CellStateName(s));

    ONSET_ASSIGN_OR_RETURN(
        db::Statement select,
        db.Prepare("SELECT id, state, axes_json FROM cells WHERE study_id = ? AND state NOT IN "
                   "('running', 'queued') ORDER BY id"));
    select.BindAll(study_id);
    std::vector<int64_t> chosen;
    while (true) {
      ONSET_ASSIGN_OR_RETURN(bool row, select.Step());
      if (!row) break;
      if (!only_set.empty() && !only_set.count(select.Int(0))) continue;
      if (!states.empty() && !states.count(select.Text(1))) continue;
      const nlohmann::json axes =
          nlohmann::json::parse(select.Text(2), nullptr, /*allow_exceptions=*/false);
      bool match = true;
      for (const auto& [key, value] : request.where) {
        match = match && axes.is_object() && axes.contains(key) && axes[key].is_string() &&
                axes[key].get<std::string>() == value;
      }
      if (match) chosen.push_back(select.Int(0));
    }
    ONSET_ASSIGN_OR_RETURN(
        db::Statement requeue,
        db.Prepare("UPDATE cells SET state = 'queued', updated_at = ?, failures = 0, "
                   "retry_at = 0, fresh = ?, note = '' WHERE id = ?"));
    ONSET_ASSIGN_OR_RETURN(db::Statement forget,
                           db.Prepare("DELETE FROM metrics WHERE cell_id = ?"));
    ONSET_ASSIGN_OR_RETURN(
        db::Statement reset,
        db.Prepare("UPDATE cells SET tokens_done = 0, tokens_per_second = 0, latest_loss = NULL "
                   "WHERE id = ?"));
    // A branch queued again needs a trunk that will produce its branch point: a trunk that has
    // ended (cancelled, failed, diverged, or succeeded and then rerun --fresh) without that
    // checkpoint is queued again with it, resuming from its own checkpoints. Otherwise the
    // branch would wait for ever, and with it `onset run` and every idle-exiting worker.
    ONSET_ASSIGN_OR_RETURN(db::Statement stranded,
                           db.Prepare("SELECT t.id FROM cells b JOIN cells t ON t.id = b.trunk_id "
                                      "WHERE b.id = ?1 AND b.role = 'branch' AND b.ready = 0 "
                                      "AND t.state NOT IN ('queued', 'backoff', 'running')"));
    std::set<int64_t> trunks;
    const std::set<int64_t> chosen_set(chosen.begin(), chosen.end());
    for (int64_t row : chosen) {
      stranded.Reset();
      stranded.BindAll(row);
      ONSET_ASSIGN_OR_RETURN(bool found, stranded.Step());
      if (found && !chosen_set.count(stranded.Int(0))) trunks.insert(stranded.Int(0));
    }
    ONSET_ASSIGN_OR_RETURN(
        db::Statement requeue_trunk,
        db.Prepare("UPDATE cells SET state = 'queued', updated_at = ?, failures = 0, "
                   "retry_at = 0, note = '' WHERE id = ?"));
    for (int64_t trunk : trunks) {
      requeue_trunk.Reset();
      requeue_trunk.BindAll(now, trunk);
      ONSET_RETURN_IF_ERROR(requeue_trunk.Run());
    }
    for (int64_t row : chosen) {
      requeue.Reset();
      requeue.BindAll(now, request.fresh ? 1 : 0, row);
      ONSET_RETURN_IF_ERROR(requeue.Run());
      if (request.fresh) {
        // From scratch: the old curve would mix with the new one.
        forget.Reset();
        forget.BindAll(row);
        ONSET_RETURN_IF_ERROR(forget.Run());
        ONSET_RETURN_IF_ERROR(trunks::MarkBranchesWaiting(db, row));
        reset.Reset();
        reset.BindAll(row);
        ONSET_RETURN_IF_ERROR(reset.Run());
      }
    }
    return static_cast<int>(chosen.size());
  });
}

absl::StatusOr<std::vector<RunningAttempt>> SqliteStore::RunningAttempts() {
  return Read<std::vector<RunningAttempt>>(
      [&](db::Connection& db) -> absl::StatusOr<std::vector<RunningAttempt>> {
        ONSET_ASSIGN_OR_RETURN(
            db::Statement stmt,
            db.Prepare(
                "SELECT a.lease_id, a.worker_id, s.name, c.hash, a.attempt, a.devices "
                "FROM attempts a JOIN cells c ON c.id = a.cell_id "
                "JOIN studies s ON s.id = c.study_id WHERE a.ended_at IS NULL ORDER BY a.id"));
        std::vector<RunningAttempt> running;
        while (true) {
          ONSET_ASSIGN_OR_RETURN(bool row, stmt.Step());
          if (!row) return running;
          running.push_back(RunningAttempt{stmt.Text(0), stmt.Text(1), stmt.Text(2), stmt.Text(3),
                                           static_cast<int>(stmt.Int(4)),
                                           rows::SplitDevices(stmt.Text(5))});
        }
      });
}

namespace {

// Metrics an evaluation reports (model/evaluation/evaluator.h); the others come from training
// steps.
bool IsEvalMetric(const std::string& name) {
  for (const char* prefix : {"eval/", "niah/", "rh/", "ablation/"}) {
    if (name.rfind(prefix, 0) == 0) return true;
  }
  return false;
}

}  // namespace

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
      if (IsEvalMetric(name)) last_eval[it->second] = std::max(last_eval[it->second], tokens);
    }
    for (size_t i = 0; i < out.results.size(); ++i) {
      for (const auto& [name, point] : last[i]) {
        if (IsEvalMetric(name) && point.first < last_eval[i]) continue;
        out.results[i].final_metrics[name] = point.second;
      }
    }
    return out;
  });
}

}  // namespace onset::coordinator
