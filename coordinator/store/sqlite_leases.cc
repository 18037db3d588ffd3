// SqliteStore: workers, claims and the calls of a lease. Every change of a cell goes through the
// lifecycle (sqlite_lifecycle.h); what is here finds rows, checks bounds and moves values.
#include <algorithm>
#include <cmath>

#include <spdlog/spdlog.h>

#include "absl/strings/str_cat.h"
#include "base/metric_names.h"
#include "base/sha256.h"
#include "common/random_id.h"
#include "common/status_macros.h"
#include "coordinator/store/sqlite_lifecycle.h"
#include "coordinator/store/sqlite_rows.h"
#include "coordinator/store/sqlite_store.h"
#include "coordinator/store/sqlite_trunks.h"
#include "coordinator/study/model_cost.h"
#include "db/instance.h"

namespace onset::coordinator {
namespace {

constexpr int kLeaseIdBytes = 16;
constexpr int kWorkerIdBytes = 8;
constexpr int kWorkerSecretBytes = 24;

// The attempt a lease names.
struct LeasedAttempt {
  int64_t row = 0;
  int64_t cell_row = 0;
  int attempt = 0;
  std::string worker_id;
  int64_t max_tokens = 0;  // 0: no bound
};

// The attempt of `lease_id`, which must be of the database's current generation: an attempt
// of an earlier one ran in a timeline a restore lost (db/instance.h), and nothing it says is
// heard.
absl::StatusOr<LeasedAttempt> FindLease(db::Connection& db, const std::string& lease_id) {
  ONSET_ASSIGN_OR_RETURN(
      db::Statement stmt,
      db.Prepare("SELECT a.id, a.cell_id, a.attempt, a.worker_id, a.max_tokens, a.generation, "
                 "i.generation FROM attempts a, instance i WHERE a.lease_id = ? AND i.id = 1"));
  stmt.BindAll(lease_id);
  ONSET_ASSIGN_OR_RETURN(bool row, stmt.Step());
  if (!row) {
    return absl::FailedPreconditionError("lease " + lease_id + " is unknown; stop the job");
  }
  if (stmt.Int(5) < stmt.Int(6)) {
    return absl::FailedPreconditionError(
        "lease " + lease_id + " (attempt " + std::to_string(stmt.Int(2)) +
        ") belongs to generation " + std::to_string(stmt.Int(5)) +
        " of this database, which was restored from a backup since (generation " +
        std::to_string(stmt.Int(6)) + "): stop the job; nothing more is recorded for it");
  }
  return LeasedAttempt{stmt.Int(0), stmt.Int(1), static_cast<int>(stmt.Int(2)), stmt.Text(3),
                       stmt.Int(4)};
}

// FailedPrecondition for an event the lifecycle fenced; its message tells the worker to stop.
absl::Status Fenced(const std::string& lease_id, const lifecycle::LoadedCell& cell,
                    const life::Step& step) {
  return absl::FailedPreconditionError("lease " + lease_id + " (cell " + cell.hash +
                                       "): " + step.message);
}

// The lease's attempt as a Contact: fenced unless it is its cell's current open attempt.
absl::StatusOr<life::Step> Contact(db::Connection& db, const std::string& lease_id,
                                   const LeasedAttempt& attempt, const life::Context& context) {
  ONSET_ASSIGN_OR_RETURN(lifecycle::LoadedCell cell, lifecycle::LoadCell(db, attempt.cell_row));
  ONSET_ASSIGN_OR_RETURN(life::Step step,
                         lifecycle::Apply(db, cell, life::Contact{attempt.attempt}, context));
  if (step.verdict == life::Verdict::kFenced) return Fenced(lease_id, cell, step);
  return step;
}

// The cell's points past `tokens` that attempts other than `keep_attempt_row` wrote go (a
// trunk's branches waiting for a checkpoint that went wait again), and its progress and latest
// loss follow.
absl::Status DiscardPointsAfter(db::Connection& db, int64_t cell_row, int64_t tokens,
                                int64_t keep_attempt_row) {
  ONSET_ASSIGN_OR_RETURN(
      db::Statement discard,
      db.Prepare("DELETE FROM metrics WHERE cell_id = ? AND tokens > ? AND attempt_id <> ?"));
  discard.BindAll(cell_row, tokens, keep_attempt_row);
  ONSET_RETURN_IF_ERROR(discard.Run());
  if (db.Changes() == 0) return absl::OkStatus();
  ONSET_ASSIGN_OR_RETURN(
      db::Statement follow,
      db.Prepare("UPDATE cells SET tokens_done = MIN(tokens_done, ?2), latest_loss = (SELECT "
                 "value FROM metrics WHERE cell_id = ?1 AND name = ?3 ORDER BY tokens DESC "
                 "LIMIT 1) WHERE id = ?1"));
  follow.BindAll(cell_row, tokens, std::string(metric::kTrainLoss));
  ONSET_RETURN_IF_ERROR(follow.Run());
  ONSET_ASSIGN_OR_RETURN(
      db::Statement waiting,
      db.Prepare("UPDATE cells SET ready = 0 WHERE trunk_id = ?1 AND role = 'branch' AND "
                 "ready = 1 AND state IN ('queued', 'backoff') AND NOT EXISTS (SELECT 1 FROM "
                 "metrics m WHERE m.cell_id = ?1 AND m.name = ?2 AND m.tokens = "
                 "cells.branch_tokens)"));
  waiting.BindAll(cell_row, std::string(trunks::kCheckpointMetric));
  return waiting.Run();
}

}  // namespace

life::Context SqliteStore::LifeContext(int64_t stop_margin_ms) const {
  life::Context context;
  context.policy = policy_;
  context.now_unix_ms = clock_.WallUnixMs();
  context.stop_margin_ms = stop_margin_ms;
  context.attempt_floor =
      static_cast<int>(db::AttemptFloor(generation_.load(std::memory_order_relaxed)));
  return context;
}

// ----- workers ---------------------------------------------------------------------------------

absl::StatusOr<RegisteredWorker> SqliteStore::RegisterWorker(const WorkerRegistration& worker) {
  ONSET_RETURN_IF_ERROR(CheckDeviceNames(worker.devices, "devices"));
  ONSET_RETURN_IF_ERROR(CheckSlurmJob(worker.slurm_job, "slurm_job"));
  return Write<RegisteredWorker>([&](db::Connection& db) -> absl::StatusOr<RegisteredWorker> {
    const int64_t now = clock_.WallUnixMs();
    ONSET_RETURN_IF_ERROR(MakeRoomForAWorker(db, now));
    RegisteredWorker registered{"w-" + common::RandomHex(kWorkerIdBytes),
                                common::RandomHex(kWorkerSecretBytes)};
    ONSET_ASSIGN_OR_RETURN(
        db::Statement stmt,
        db.Prepare("INSERT INTO workers (id, host, slots, version, registered_at, last_seen_at, "
                   "devices, slurm_job, secret_sha256) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"));
    stmt.BindAll(registered.id, worker.host, worker.slots, worker.version, now, now,
                 rows::JoinDevices(worker.devices), worker.slurm_job,
                 base::Sha256Hex(registered.secret));
    ONSET_RETURN_IF_ERROR(stmt.Run());
    return registered;
  });
}

absl::Status SqliteStore::AuthenticateWorker(const std::string& worker_id,
                                             const std::string& secret) {
  return Read<bool>([&](db::Connection& db) -> absl::StatusOr<bool> {
           ONSET_ASSIGN_OR_RETURN(
               db::Statement stmt,
               db.Prepare("SELECT secret_sha256, exited_at FROM workers WHERE id = ?"));
           stmt.BindAll(worker_id);
           ONSET_ASSIGN_OR_RETURN(bool found, stmt.Step());
           if (!found) {
             return absl::FailedPreconditionError("worker '" + worker_id +
                                                  "' is not registered; register again");
           }
           if (!stmt.IsNull(1)) {
             return absl::FailedPreconditionError(
                 "worker '" + worker_id +
                 "' said it exits (DeregisterWorker) and is no longer served; register again");
           }
           if (stmt.Text(0).empty()) {
             return absl::FailedPreconditionError(
                 "worker '" + worker_id +
                 "' registered before workers were given secrets; register again");
           }
           if (stmt.Text(0) != base::Sha256Hex(secret)) {
             return absl::PermissionDeniedError("the secret does not match worker '" + worker_id +
                                                "': only that worker may call for it");
           }
           return true;
         })
      .status();
}

absl::Status SqliteStore::DeregisterWorker(const std::string& worker_id) {
  if (!writer_) return ReadOnlyError();
  return writer_->Run([&](db::Connection& db) -> absl::Status {
    const life::Context context = LifeContext(0);
    ONSET_ASSIGN_OR_RETURN(
        db::Statement exit,
        db.Prepare("UPDATE workers SET exited_at = COALESCE(exited_at, ?1), last_seen_at = ?1 "
                   "WHERE id = ?2 RETURNING id"));
    exit.BindAll(context.now_unix_ms, worker_id);
    ONSET_ASSIGN_OR_RETURN(bool found, exit.Step());
    if (!found) return absl::NotFoundError("worker '" + worker_id + "' is not registered");
    ONSET_RETURN_IF_ERROR(exit.Run());
    // A worker says it exits once its job threads have ended, and each of those waited for its
    // trainer: what is still open never got its report through, but runs no more.
    ONSET_ASSIGN_OR_RETURN(
        db::Statement open,
        db.Prepare(
            "SELECT cell_id, attempt FROM attempts WHERE worker_id = ? AND ended_at IS NULL"));
    open.BindAll(worker_id);
    std::vector<std::pair<int64_t, int>> attempts;
    while (true) {
      ONSET_ASSIGN_OR_RETURN(bool row, open.Step());
      if (!row) break;
      attempts.emplace_back(open.Int(0), static_cast<int>(open.Int(1)));
    }
    for (const auto& [cell_row, attempt] : attempts) {
      ONSET_ASSIGN_OR_RETURN(lifecycle::LoadedCell cell, lifecycle::LoadCell(db, cell_row));
      ONSET_RETURN_IF_ERROR(
          lifecycle::Apply(
              db, cell, life::HandBack{attempt, "its worker exited without reporting it"}, context)
              .status());
    }
    return absl::OkStatus();
  });
}

// ----- claims ----------------------------------------------------------------------------------

absl::StatusOr<std::optional<ClaimedJob>> SqliteStore::ClaimNextCell(
    const std::string& worker_id, const std::vector<std::string>& free_devices) {
  if (free_devices.empty()) {
    return absl::InvalidArgumentError("free_devices: a worker leases only with a free device");
  }
  ONSET_RETURN_IF_ERROR(CheckDeviceNames(free_devices, "free_devices"));
  return Write<std::optional<ClaimedJob>>(
      [&](db::Connection& db) -> absl::StatusOr<std::optional<ClaimedJob>> {
        const life::Context context = LifeContext(0);
        const int64_t now = context.now_unix_ms;

        ONSET_ASSIGN_OR_RETURN(
            db::Statement seen,
            db.Prepare("UPDATE workers SET last_seen_at = ? WHERE id = ? RETURNING devices, "
                       "exited_at"));
        seen.BindAll(now, worker_id);
        ONSET_ASSIGN_OR_RETURN(bool registered, seen.Step());
        if (!registered) {
          return absl::FailedPreconditionError("worker '" + worker_id +
                                               "' is not registered; register again");
        }
        const std::vector<std::string> own = rows::SplitDevices(seen.Text(0));
        // (SQLite 3.40 computes "exited_at IS NOT NULL" wrongly in a RETURNING clause: the column
        // itself is read.)
        const bool exited = !seen.IsNull(1);
        ONSET_RETURN_IF_ERROR(seen.Run());
        if (exited) {
          return absl::FailedPreconditionError("worker '" + worker_id +
                                               "' said it exits and is no longer served; register "
                                               "again");
        }
        for (const std::string& d : free_devices) {
          if (!own.empty() && std::find(own.begin(), own.end(), d) == own.end()) {
            return absl::InvalidArgumentError("free_devices: " + d + " is not a device of worker " +
                                              worker_id + " (" + rows::JoinDevices(own) + ")");
          }
        }
        // After a restore no cell is claimed until the workers of the lost timeline have had
        // their time to stop its trainers (InstanceStore::StartServing).
        if (now < claims_from_unix_ms_.load(std::memory_order_relaxed)) {
          return std::optional<ClaimedJob>();
        }

        // The claim rule (coordinator/cells/claim_rule.h: NextClaim) as an indexed query: the first
        // cell in queue order that is queued, or done waiting out its backoff, needs no more
        // devices than are free and is ready (a WSD branch whose trunk reported its checkpoint). A
        // bigger cell ahead waits for a worker with room, and a branch for its trunk, without
        // holding up the cells behind it. claim_rule_agreement_test checks this query against the
        // rule. The write transaction (BEGIN IMMEDIATE) holds the database's write lock, so no one
        // claims it in between.
        const std::string claimable = trunks::ClaimableRoleSql("q");
        ONSET_ASSIGN_OR_RETURN(
            db::Statement pick,
            // The first fitting queued cell and the first fitting backoff cell that is due, each
            // found by walking cells_by_state (state, id) from its start, then the earlier of the
            // two: an OR of the two states would sort every queued cell on each lease.
            db.Prepare("SELECT c.id, c.config_json, s.name, c.devices, c.trunk_id, "
                       "c.branch_tokens, COALESCE(t.hash, '') "
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
        if (!row) return std::optional<ClaimedJob>();
        const int64_t cell_row = pick.Int(0);
        ClaimedJob job;
        job.worker_id = worker_id;
        job.config_json = pick.Text(1);
        job.study = pick.Text(2);
        job.devices.assign(free_devices.begin(), free_devices.begin() + pick.Int(3));
        const int64_t trunk_row = pick.IsNull(4) ? 0 : pick.Int(4);
        job.branch_tokens = pick.Int(5);
        job.trunk_id = pick.Text(6);
        ONSET_RETURN_IF_ERROR(pick.Run());

        ONSET_ASSIGN_OR_RETURN(lifecycle::LoadedCell cell, lifecycle::LoadCell(db, cell_row));
        if (!life::Claimable(cell.life, now)) {
          return absl::InternalError(absl::StrCat("the claim rule picked cell ", cell.hash,
                                                  ", which the lifecycle does not let be claimed (",
                                                  CellStateName(cell.life.state), ")"));
        }
        job.cell_id = cell.hash;
        job.tokens_budget = cell.tokens_budget;
        job.role = cell.role;
        // A first attempt of a lineage after a fresh rerun starts from scratch.
        job.fresh = cell.life.attempt > 0 && cell.life.attempt_lineage != cell.life.lineage;
        // Where it continues: the newest checkpoint its lineage recorded. What the cell reported
        // past it was not saved by any checkpoint and is trained again.
        ONSET_ASSIGN_OR_RETURN(job.resume_from, rows::ResumePoints(db, cell_row, kMaxResumePoints));
        const int64_t resume_tokens = job.resume_from.empty() ? 0 : job.resume_from.front().tokens;
        ONSET_RETURN_IF_ERROR(DiscardPointsAfter(db, cell_row, resume_tokens, /*keep=*/0));
        if (job.role == CellRole::kBranch && trunk_row > 0) {
          ONSET_ASSIGN_OR_RETURN(
              db::Statement trunk,
              db.Prepare(
                  "SELECT a.attempt, a.own_checkpoint_dir FROM metrics m JOIN attempts a "
                  "ON a.id = m.attempt_id WHERE m.cell_id = ? AND m.name = ? AND m.tokens = ?"));
          trunk.BindAll(trunk_row, std::string(trunks::kCheckpointMetric), job.branch_tokens);
          ONSET_ASSIGN_OR_RETURN(bool recorded, trunk.Step());
          if (recorded) {
            job.trunk_attempt = static_cast<int>(trunk.Int(0));
            job.trunk_own_dir = trunk.Int(1) != 0;
          }
        }

        job.lease_id = common::RandomHex(kLeaseIdBytes);
        job.attempt = std::max(cell.life.attempt, context.attempt_floor) + 1;
        ONSET_ASSIGN_OR_RETURN(
            db::Statement insert,
            db.Prepare("INSERT INTO attempts (cell_id, attempt, worker_id, lease_id, started_at, "
                       "devices, lineage, contacted, own_checkpoint_dir, max_tokens, generation) "
                       "VALUES (?, ?, ?, ?, ?, ?, ?, 0, 1, ?, ?)"));
        insert.BindAll(cell_row, job.attempt, worker_id, job.lease_id, now,
                       rows::JoinDevices(job.devices), cell.life.lineage,
                       MaxPointTokens(job.config_json, cell.tokens_budget),
                       generation_.load(std::memory_order_relaxed));
        ONSET_RETURN_IF_ERROR(insert.Run());
        // After the attempt exists, so that the state change's event names it.
        ONSET_ASSIGN_OR_RETURN(life::Step step, lifecycle::Apply(db, cell, life::Claim{}, context));
        if (step.verdict != life::Verdict::kApplied || step.next.attempt != job.attempt) {
          return absl::InternalError("claiming cell " + cell.hash + ": " + step.message);
        }
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

// ----- the calls of a lease --------------------------------------------------------------------

absl::StatusOr<LeaseStatus> SqliteStore::RecordProgress(const std::string& lease_id,
                                                        std::optional<int64_t> tokens_done,
                                                        double tokens_per_second) {
  return Write<LeaseStatus>([&](db::Connection& db) -> absl::StatusOr<LeaseStatus> {
    const life::Context context = LifeContext(0);
    ONSET_ASSIGN_OR_RETURN(LeasedAttempt attempt, FindLease(db, lease_id));
    ONSET_ASSIGN_OR_RETURN(life::Step step, Contact(db, lease_id, attempt, context));
    if (tokens_done && attempt.max_tokens > 0 && *tokens_done > attempt.max_tokens) {
      spdlog::warn("lease {}: progress {} past the attempt's bound {}: not recorded", lease_id,
                   *tokens_done, attempt.max_tokens);
      tokens_done.reset();
    }
    ONSET_ASSIGN_OR_RETURN(db::Statement cell,
                           db.Prepare("UPDATE cells SET tokens_done = COALESCE(?, tokens_done), "
                                      "tokens_per_second = ?, updated_at = ? WHERE id = ?"));
    cell.BindAll(tokens_done, std::isfinite(tokens_per_second) ? tokens_per_second : 0.0,
                 context.now_unix_ms, attempt.cell_row);
    ONSET_RETURN_IF_ERROR(cell.Run());
    ONSET_ASSIGN_OR_RETURN(db::Statement worker,
                           db.Prepare("UPDATE workers SET last_seen_at = ? WHERE id = ?"));
    worker.BindAll(context.now_unix_ms, attempt.worker_id);
    ONSET_RETURN_IF_ERROR(worker.Run());
    return LeaseStatus{step.stop};
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
    const life::Context context = LifeContext(0);
    ONSET_ASSIGN_OR_RETURN(LeasedAttempt attempt, FindLease(db, lease_id));
    ONSET_ASSIGN_OR_RETURN(life::Step step, Contact(db, lease_id, attempt, context));
    ONSET_ASSIGN_OR_RETURN(lifecycle::LoadedCell cell, lifecycle::LoadCell(db, attempt.cell_row));
    // Where the trainer started: what other attempts reported past it is not this run's.
    for (const MetricPoint& p : points) {
      if (p.name != metric::kTrainResumedAtTokens) continue;
      if (attempt.max_tokens > 0 && p.tokens > attempt.max_tokens) continue;
      ONSET_RETURN_IF_ERROR(DiscardPointsAfter(db, attempt.cell_row, p.tokens, attempt.row));
      ONSET_ASSIGN_OR_RETURN(db::Statement started,
                             db.Prepare("UPDATE attempts SET started_at_tokens = ? WHERE id = ?"));
      started.BindAll(p.tokens, attempt.row);
      ONSET_RETURN_IF_ERROR(started.Run());
    }
    ONSET_ASSIGN_OR_RETURN(
        db::Statement upsert,
        db.Prepare("INSERT INTO metrics (cell_id, name, tokens, value, attempt_id, at_unix_ms) "
                   "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (cell_id, name, tokens) "
                   "DO UPDATE SET value = excluded.value, attempt_id = excluded.attempt_id, "
                   "at_unix_ms = excluded.at_unix_ms"));
    bool has_loss = false;
    int written = 0;
    int64_t refused = 0;
    for (const MetricPoint& p : points) {
      // A point past the budget (a step's overshoot and a last evaluation allowed) is not the
      // attempt's to report: refused alone, so that one bad point never costs the batch.
      if (attempt.max_tokens > 0 && p.tokens > attempt.max_tokens) {
        ++refused;
        continue;
      }
      upsert.Reset();
      upsert.BindAll(attempt.cell_row, p.name, p.tokens, p.value, attempt.row,
                     p.at_unix_ms > 0 ? std::optional<int64_t>(p.at_unix_ms) : std::nullopt);
      ONSET_RETURN_IF_ERROR(upsert.Run());
      ++written;
      has_loss = has_loss || p.name == metric::kTrainLoss;
      if (cell.role == CellRole::kTrunk && p.name == trunks::kCheckpointMetric) {
        ONSET_RETURN_IF_ERROR(trunks::MarkBranchesReady(db, attempt.cell_row, p.tokens));
      }
    }
    if (refused > 0) {
      spdlog::warn(
          "lease {} (cell {}): refused {} metric points past the attempt's bound of {} "
          "tokens",
          lease_id, cell.hash, refused, attempt.max_tokens);
    }
    if (has_loss) {
      ONSET_ASSIGN_OR_RETURN(
          db::Statement loss,
          db.Prepare("UPDATE cells SET updated_at = ?2, latest_loss = (SELECT value FROM metrics "
                     "WHERE cell_id = ?1 AND name = ?3 ORDER BY tokens DESC LIMIT 1) "
                     "WHERE id = ?1"));
      loss.BindAll(attempt.cell_row, context.now_unix_ms, std::string(metric::kTrainLoss));
      ONSET_RETURN_IF_ERROR(loss.Run());
    }
    (void)step;
    return written;
  });
}

absl::Status SqliteStore::FinishAttempt(const std::string& lease_id, const AttemptEnd& end) {
  if (!writer_) return ReadOnlyError();
  return writer_->Run([&](db::Connection& db) -> absl::Status {
    const life::Context context = LifeContext(0);
    ONSET_ASSIGN_OR_RETURN(LeasedAttempt attempt, FindLease(db, lease_id));
    ONSET_ASSIGN_OR_RETURN(lifecycle::LoadedCell cell, lifecycle::LoadCell(db, attempt.cell_row));
    life::Report report;
    report.attempt = attempt.attempt;
    report.end = end;
    if (cell.role == CellRole::kTrunk && end.outcome == AttemptOutcome::kSucceeded) {
      // A trunk is done when its checkpoint at its budget (where its last branch starts) was
      // recorded; without it, one extended while it ran trains on.
      report.trunk.is_trunk = true;
      report.trunk.tokens_budget = cell.tokens_budget;
      ONSET_ASSIGN_OR_RETURN(report.trunk.checkpoint_at_budget,
                             trunks::HasCheckpointPoint(db, cell.row, cell.tokens_budget));
      report.trunk.extended = cell.tokens_done < cell.tokens_budget;
    }
    ONSET_ASSIGN_OR_RETURN(life::Step step, lifecycle::Apply(db, cell, report, context));
    if (step.verdict == life::Verdict::kFenced) return Fenced(lease_id, cell, step);
    if (step.late_success) {
      spdlog::info(
          "lease {} (cell {}, attempt {}): success reported after the lease expired; "
          "no other attempt had run, so it stands",
          lease_id, cell.hash, attempt.attempt);
    }
    return absl::OkStatus();
  });
}

absl::Status SqliteStore::ExpireAttempt(const std::string& lease_id, const std::string& reason,
                                        int64_t stop_margin_ms) {
  if (!writer_) return ReadOnlyError();
  return writer_->Run([&](db::Connection& db) -> absl::Status {
    const life::Context context = LifeContext(stop_margin_ms);
    ONSET_ASSIGN_OR_RETURN(LeasedAttempt attempt, FindLease(db, lease_id));
    ONSET_ASSIGN_OR_RETURN(lifecycle::LoadedCell cell, lifecycle::LoadCell(db, attempt.cell_row));
    ONSET_ASSIGN_OR_RETURN(
        life::Step step,
        lifecycle::Apply(db, cell, life::Expire{attempt.attempt, reason}, context));
    if (step.verdict != life::Verdict::kApplied) {
      return absl::FailedPreconditionError("lease " + lease_id + ": its attempt has ended");
    }
    return absl::OkStatus();
  });
}

absl::Status SqliteStore::HandBackAttempt(const std::string& lease_id, const std::string& reason) {
  if (!writer_) return ReadOnlyError();
  return writer_->Run([&](db::Connection& db) -> absl::Status {
    const life::Context context = LifeContext(0);
    ONSET_ASSIGN_OR_RETURN(LeasedAttempt attempt, FindLease(db, lease_id));
    ONSET_ASSIGN_OR_RETURN(lifecycle::LoadedCell cell, lifecycle::LoadCell(db, attempt.cell_row));
    ONSET_ASSIGN_OR_RETURN(
        life::Step step,
        lifecycle::Apply(db, cell, life::HandBack{attempt.attempt, reason}, context));
    if (step.verdict != life::Verdict::kApplied) {
      return absl::FailedPreconditionError("lease " + lease_id + ": its attempt has ended");
    }
    return absl::OkStatus();
  });
}

absl::StatusOr<std::string> SqliteStore::LeaseHolder(const std::string& lease_id) {
  return Read<std::string>([&](db::Connection& db) -> absl::StatusOr<std::string> {
    ONSET_ASSIGN_OR_RETURN(LeasedAttempt attempt, FindLease(db, lease_id));
    return attempt.worker_id;
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

}  // namespace onset::coordinator
