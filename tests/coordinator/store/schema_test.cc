#include "db/schema.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>
#include <fstream>

#include "db/migrations.h"
#include "tests/coordinator/test_util.h"

namespace onset::db {
namespace {

using testutil::TempDir;

int UserVersion(Connection* db) {
  absl::StatusOr<Statement> stmt = db->Prepare("PRAGMA user_version");
  EXPECT_TRUE(stmt.ok());
  EXPECT_TRUE(*stmt->Step());
  return static_cast<int>(stmt->Int(0));
}

int64_t CountTables(Connection* db) {
  absl::StatusOr<Statement> stmt = db->Prepare(
      "SELECT COUNT(*) FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%'");
  EXPECT_TRUE(stmt.ok());
  EXPECT_TRUE(*stmt->Step());
  return stmt->Int(0);
}

// Writes a database at `path` as onset left it at schema `version` (its migrations applied, the
// later ones not), holding `rows` (SQL), for the tests of what a later version makes of it.
void MakeDatabaseAt(const std::string& path, int version, const std::string& rows) {
  absl::StatusOr<std::unique_ptr<Connection>> db = Connection::Open(path);
  ASSERT_TRUE(db.ok()) << db.status();
  ASSERT_TRUE((*db)->Exec("PRAGMA foreign_keys=OFF").ok());
  for (int v = 0; v < version; ++v) ASSERT_TRUE((*db)->Exec(Migrations()[v].sql).ok()) << v + 1;
  const absl::Status filled =
      (*db)->Exec("PRAGMA user_version = " + std::to_string(version) + ";\n" + rows);
  ASSERT_TRUE(filled.ok()) << filled;
}

TEST(SchemaTest, MigrationsAreEmbeddedAndContiguous) {
  const std::vector<Migration>& all = Migrations();
  ASSERT_FALSE(all.empty());
  for (size_t i = 0; i < all.size(); ++i) EXPECT_EQ(all[i].version, static_cast<int>(i) + 1);
  EXPECT_STREQ(all[0].name, "initial");
  EXPECT_THAT(all[0].sql, ::testing::HasSubstr("CREATE TABLE cells"));
  EXPECT_EQ(LatestSchemaVersion(), static_cast<int>(all.size()));
}

// A version-1 database with a study, a failed and a lost attempt and a metric keeps every row
// through the rebuild of version 2, and the old attempts get their failure class.
TEST(SchemaTest, VersionTwoKeepsTheRowsOfAVersionOneDatabase) {
  TempDir dir;
  const std::string path = dir.File("v1.db");
  {
    absl::StatusOr<std::unique_ptr<Connection>> db = Connection::Open(path);
    ASSERT_TRUE(db.ok()) << db.status();
    ASSERT_TRUE((*db)->Exec(Migrations()[0].sql).ok());
    ASSERT_TRUE((*db)
                    ->Exec(R"sql(
      PRAGMA user_version = 1;
      INSERT INTO studies VALUES (1, 's', '', 's.yaml', 'name: s', 0);
      INSERT INTO cells (id, study_id, hash, axes_json, config_json, tokens_budget, state,
                         created_at, updated_at)
        VALUES (1, 1, 'aaaa', '{}', '{}', 100, 'failed', 0, 0),
               (2, 1, 'bbbb', '{}', '{}', 100, 'queued', 0, 0);
      INSERT INTO workers VALUES ('w-1', 'h', 1, 'v', 0, 0);
      INSERT INTO attempts (id, cell_id, attempt, worker_id, lease_id, started_at, ended_at,
                            outcome, reason)
        VALUES (1, 1, 1, 'w-1', 'l1', 0, 1, 'failed', 'exit code 1'),
               (2, 2, 1, 'w-1', 'l2', 0, 1, 'lost', 'lease expired');
      INSERT INTO metrics VALUES (1, 'train/loss', 10, 2.5, 1);
    )sql")
                    .ok());
  }
  absl::StatusOr<std::unique_ptr<Connection>> db = OpenDatabase(path);
  ASSERT_TRUE(db.ok()) << db.status();
  EXPECT_EQ(UserVersion(db->get()), LatestSchemaVersion());
  absl::StatusOr<Statement> cells = (*db)->Prepare(
      "SELECT c.hash, c.state, c.failures, a.failure_class, "
      "(SELECT COUNT(*) FROM metrics m WHERE m.cell_id = c.id) FROM cells c "
      "JOIN attempts a ON a.cell_id = c.id ORDER BY c.id");
  ASSERT_TRUE(cells.ok()) << cells.status();
  ASSERT_TRUE(*cells->Step());
  EXPECT_EQ(cells->Text(0), "aaaa");
  EXPECT_EQ(cells->Text(1), "failed");
  EXPECT_EQ(cells->Int(2), 0);
  EXPECT_EQ(cells->Text(3), "crash");
  EXPECT_EQ(cells->Int(4), 1);
  ASSERT_TRUE(*cells->Step());
  EXPECT_EQ(cells->Text(3), "lost");
  // Foreign keys are back on after the migration.
  EXPECT_FALSE((*db)->Exec("INSERT INTO metrics VALUES (99, 'x', 1, 1.0, 1)").ok());
}

// A version-4 database keeps its rows through version 5, every cell a cell that runs alone;
// a state change's reason is still its latest attempt's, unless the cell has a note.
TEST(SchemaTest, VersionFiveKeepsTheCellsOfAVersionFourDatabaseAsCells) {
  TempDir dir;
  const std::string path = dir.File("v4.db");
  ASSERT_NO_FATAL_FAILURE(MakeDatabaseAt(path, 4, R"sql(
      INSERT INTO studies VALUES (1, 's', '', 's.yaml', 'name: s', 0);
      INSERT INTO cells (id, study_id, hash, axes_json, config_json, tokens_budget, state,
                         created_at, updated_at)
        VALUES (1, 1, 'aaaa', '{}', '{}', 100, 'failed', 0, 0),
               (2, 1, 'bbbb', '{}', '{}', 100, 'succeeded', 0, 0);
      INSERT INTO workers VALUES ('w-1', 'h', 1, 'v', 0, 0, '');
      INSERT INTO attempts (id, cell_id, attempt, worker_id, lease_id, started_at, ended_at,
                            outcome, reason)
        VALUES (1, 1, 1, 'w-1', 'l1', 0, 1, 'failed', 'exit code 1');
      INSERT INTO metrics VALUES (2, 'train/loss', 10, 2.5, 1);
  )sql"));
  absl::StatusOr<std::unique_ptr<Connection>> db = OpenDatabase(path);
  ASSERT_TRUE(db.ok()) << db.status();
  EXPECT_EQ(UserVersion(db->get()), LatestSchemaVersion());
  const auto rows = [&](const std::string& sql) {
    std::vector<std::string> out;
    absl::StatusOr<Statement> stmt = (*db)->Prepare(sql);
    EXPECT_TRUE(stmt.ok()) << stmt.status();
    if (!stmt.ok()) return out;
    while (*stmt->Step()) out.push_back(stmt->Text(0));
    return out;
  };
  EXPECT_THAT(rows("SELECT hash || '|' || state || '|' || role || '|' || "
                   "COALESCE(trunk_id, 'NULL') || '|' || branch_tokens || '|' || note "
                   "FROM cells ORDER BY id"),
              ::testing::ElementsAre("aaaa|failed|cell|NULL|0|", "bbbb|succeeded|cell|NULL|0|"));
  EXPECT_THAT(rows("SELECT COUNT(*) FROM metrics"), ::testing::ElementsAre("1"));

  ASSERT_TRUE((*db)->Exec("UPDATE cells SET state = 'queued' WHERE id = 1").ok());
  ASSERT_TRUE((*db)
                  ->Exec("UPDATE cells SET state = 'failed', note = 'trunk t failed' "
                         "WHERE id = 2")
                  .ok());
  EXPECT_THAT(rows("SELECT reason FROM cell_events WHERE old_state IS NOT NULL ORDER BY seq"),
              ::testing::ElementsAre("exit code 1", "trunk t failed"));
  // The role is one of three; a branch's trunk is a row.
  EXPECT_FALSE((*db)->Exec("UPDATE cells SET role = 'leaf' WHERE id = 1").ok());
  EXPECT_FALSE((*db)->Exec("UPDATE cells SET role = 'branch', trunk_id = 99 WHERE id = 1").ok());
  EXPECT_TRUE((*db)->Exec("UPDATE cells SET role = 'branch', trunk_id = 2 WHERE id = 1").ok());
}

// A version-5 database keeps its workers through version 6, none of them in a Slurm job.
TEST(SchemaTest, VersionSixKeepsTheWorkersOfAVersionFiveDatabase) {
  TempDir dir;
  const std::string path = dir.File("v5.db");
  ASSERT_NO_FATAL_FAILURE(MakeDatabaseAt(path, 5, R"sql(
      INSERT INTO workers VALUES ('w-1', 'h', 2, 'v', 10, 20, 'cuda:0,cuda:1');
  )sql"));
  absl::StatusOr<std::unique_ptr<Connection>> db = OpenDatabase(path);
  ASSERT_TRUE(db.ok()) << db.status();
  EXPECT_EQ(UserVersion(db->get()), LatestSchemaVersion());
  absl::StatusOr<Statement> stmt = (*db)->Prepare(
      "SELECT id || '|' || host || '|' || slots || '|' || devices || '|' || slurm_job "
      "FROM workers");
  ASSERT_TRUE(stmt.ok()) << stmt.status();
  ASSERT_TRUE(*stmt->Step());
  EXPECT_EQ(stmt->Text(0), "w-1|h|2|cuda:0,cuda:1|");
  EXPECT_FALSE(*stmt->Step());
}

// Version 7 computes `ready` for the branches a version 6 database holds: ready where the trunk
// reported the checkpoint a branch starts from, waiting otherwise; every other row ready.
TEST(SchemaTest, VersionSevenMarksTheBranchesWhoseCheckpointExistsReady) {
  TempDir dir;
  const std::string path = dir.File("v6.db");
  ASSERT_NO_FATAL_FAILURE(MakeDatabaseAt(path, 6, R"sql(
      INSERT INTO studies (id, name, description, source_name, source_yaml, created_at)
        VALUES (1, 's', '', '', '', 0);
      INSERT INTO cells (id, study_id, hash, axes_json, config_json, tokens_budget, created_at,
                         updated_at, role, trunk_id, branch_tokens)
        VALUES (1, 1, 't', '{}', '{}', 200, 0, 0, 'trunk', NULL, 0),
               (2, 1, 'b1', '{}', '{}', 125, 0, 0, 'branch', 1, 100),
               (3, 1, 'b2', '{}', '{}', 250, 0, 0, 'branch', 1, 200),
               (4, 1, 'c', '{}', '{}', 300, 0, 0, 'cell', NULL, 0);
      INSERT INTO workers VALUES ('w', 'h', 1, 'v', 0, 0, '', '');
      INSERT INTO attempts (id, cell_id, attempt, worker_id, lease_id, started_at)
        VALUES (1, 1, 1, 'w', 'l', 0);
      INSERT INTO metrics (cell_id, name, tokens, value, attempt_id)
        VALUES (1, 'checkpoint/bytes', 100, 1e6, 1);
  )sql"));
  absl::StatusOr<std::unique_ptr<Connection>> db = OpenDatabase(path);
  ASSERT_TRUE(db.ok()) << db.status();
  EXPECT_EQ(UserVersion(db->get()), LatestSchemaVersion());
  absl::StatusOr<Statement> stmt =
      (*db)->Prepare("SELECT group_concat(hash || '=' || ready, ' ') FROM cells ORDER BY id");
  ASSERT_TRUE(stmt.ok()) << stmt.status();
  ASSERT_TRUE(*stmt->Step());
  EXPECT_EQ(stmt->Text(0), "t=1 b1=1 b2=0 c=1");
}

// Version 15 makes every database generation 1, no backup, its attempts of generation 1 and its
// claims open; it records no rotating backup.
TEST(SchemaTest, VersionFifteenMakesADatabaseGenerationOneWithItsAttempts) {
  TempDir dir;
  const std::string path = dir.File("v14.db");
  ASSERT_NO_FATAL_FAILURE(MakeDatabaseAt(path, 14, R"sql(
      INSERT INTO studies (id, name, description, source_name, source_yaml, created_at)
        VALUES (1, 's', '', '', '', 0);
      INSERT INTO cells (id, study_id, hash, axes_json, config_json, tokens_budget, created_at,
                         updated_at)
        VALUES (1, 1, 'c', '{}', '{}', 300, 0, 0);
      INSERT INTO workers (id, host, slots, version, registered_at, last_seen_at, devices)
        VALUES ('w', 'h', 1, 'v', 0, 0, '');
      INSERT INTO attempts (id, cell_id, attempt, worker_id, lease_id, started_at)
        VALUES (1, 1, 1, 'w', 'l', 0);
  )sql"));
  absl::StatusOr<std::unique_ptr<Connection>> db = OpenDatabase(path);
  ASSERT_TRUE(db.ok()) << db.status();
  absl::StatusOr<Statement> stmt = (*db)->Prepare(
      "SELECT i.generation || '|' || COALESCE(i.backup_taken_unix_ms, 'none') || '|' || "
      "i.claims_from_unix_ms || '|' || a.generation || '|' || (SELECT COUNT(*) FROM backups) "
      "FROM instance i, attempts a");
  ASSERT_TRUE(stmt.ok()) << stmt.status();
  ASSERT_TRUE(*stmt->Step());
  EXPECT_EQ(stmt->Text(0), "1|none|0|1|0");
  EXPECT_FALSE(*stmt->Step());
}

TEST(SchemaTest, FreshDatabaseReachesTheLatestVersionAndReopeningIsANoOp) {
  TempDir dir;
  const std::string path = dir.File("onset.db");
  {
    absl::StatusOr<std::unique_ptr<Connection>> db = OpenDatabase(path);
    ASSERT_TRUE(db.ok()) << db.status();
    EXPECT_EQ(UserVersion(db->get()), LatestSchemaVersion());
    EXPECT_EQ(CountTables(db->get()), 14);
    ASSERT_TRUE((*db)
                    ->Exec("INSERT INTO workers (id, host, slots, version, registered_at, "
                           "last_seen_at, devices) VALUES ('w', 'h', 1, 'v', 1, 1, '')")
                    .ok());
  }
  absl::StatusOr<std::unique_ptr<Connection>> db = OpenDatabase(path);
  ASSERT_TRUE(db.ok()) << db.status();
  EXPECT_EQ(UserVersion(db->get()), LatestSchemaVersion());
  EXPECT_EQ(CountTables(db->get()), 14);
  absl::StatusOr<Statement> stmt = (*db)->Prepare("SELECT COUNT(*) FROM workers");
  ASSERT_TRUE(stmt.ok());
  ASSERT_TRUE(*stmt->Step());
  EXPECT_EQ(stmt->Int(0), 1);  // data survives; nothing re-created
  EXPECT_TRUE(Migrate(db->get()).ok());
}

TEST(SchemaTest, RefusesADatabaseFromANewerOnset) {
  TempDir dir;
  const std::string path = dir.File("onset.db");
  {
    absl::StatusOr<std::unique_ptr<Connection>> db = OpenDatabase(path);
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE(
        (*db)->Exec("PRAGMA user_version = " + std::to_string(LatestSchemaVersion() + 1)).ok());
  }
  absl::StatusOr<std::unique_ptr<Connection>> db = OpenDatabase(path);
  ASSERT_FALSE(db.ok());
  EXPECT_EQ(db.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(db.status().message()), ::testing::HasSubstr(path));
  EXPECT_THAT(std::string(db.status().message()), ::testing::HasSubstr("newer"));
}

TEST(SchemaTest, PragmasAreApplied) {
  TempDir dir;
  absl::StatusOr<std::unique_ptr<Connection>> db = OpenDatabase(dir.File("onset.db"));
  ASSERT_TRUE(db.ok());
  for (auto [pragma, expected] : {std::pair<const char*, const char*>{"journal_mode", "wal"},
                                  {"foreign_keys", "1"},
                                  {"synchronous", "1"}}) {
    absl::StatusOr<Statement> stmt = (*db)->Prepare(std::string("PRAGMA ") + pragma);
    ASSERT_TRUE(stmt.ok());
    ASSERT_TRUE(*stmt->Step());
    EXPECT_EQ(stmt->Text(0), expected) << pragma;
  }
}

TEST(SchemaTest, TablesAreStrictAndConstrained) {
  absl::StatusOr<std::unique_ptr<Connection>> db = OpenDatabase(":memory:");
  ASSERT_TRUE(db.ok());
  Connection* c = db->get();
  // STRICT: text in an INTEGER column is refused.
  EXPECT_FALSE(c->Exec("INSERT INTO workers VALUES ('w', 'h', 'many', 'v', 1, 1)").ok());
  ASSERT_TRUE(c->Exec("INSERT INTO studies (name, source_name, source_yaml, created_at) "
                      "VALUES ('s', 'f', 'y', 1)")
                  .ok());
  // CHECK on cells.state.
  EXPECT_FALSE(c->Exec("INSERT INTO cells (study_id, hash, axes_json, config_json, "
                       "tokens_budget, state, created_at, updated_at) "
                       "VALUES (1, 'h', '{}', '{}', 1, 'paused', 1, 1)")
                   .ok());
  // Foreign keys: a cell of a study that does not exist.
  EXPECT_FALSE(c->Exec("INSERT INTO cells (study_id, hash, axes_json, config_json, "
                       "tokens_budget, created_at, updated_at) "
                       "VALUES (99, 'h', '{}', '{}', 1, 1, 1)")
                   .ok());
  // CHECK on access_tokens.role, and names and digests unique.
  const auto token = [&](const std::string& name, const std::string& role,
                         const std::string& digest) {
    return c
        ->Exec(
            "INSERT INTO access_tokens (name, role, secret_sha256, created_at, created_by) "
            "VALUES ('" +
            name + "', '" + role + "', '" + digest + "', 1, 'onsetd.token')")
        .ok();
  };
  EXPECT_TRUE(token("prom", "read", "d1"));
  EXPECT_FALSE(token("root", "superuser", "d2"));
  EXPECT_FALSE(token("prom", "admin", "d3"));
  EXPECT_FALSE(token("other", "admin", "d1"));
}

// What `onset status` opens when no coordinator serves the file: never created, migrated or
// written, and refused unless its schema is this binary's.
TEST(SchemaTest, ReadOnlyOpenNeedsTheFileAtThisVersionAndWritesNothing) {
  TempDir dir;
  const std::string path = dir.File("onset.db");
  absl::StatusOr<std::unique_ptr<Connection>> missing = OpenDatabaseReadOnly(path);
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_FALSE(std::filesystem::exists(path));

  ASSERT_TRUE(OpenDatabase(path).ok());
  absl::StatusOr<std::unique_ptr<Connection>> db = OpenDatabaseReadOnly(path);
  ASSERT_TRUE(db.ok()) << db.status();
  EXPECT_EQ(UserVersion(db->get()), LatestSchemaVersion());
  EXPECT_EQ(CountTables(db->get()), 14);
  EXPECT_FALSE((*db)->Exec("INSERT INTO workers VALUES ('w', 'h', 1, 'v', 1, 1, '')").ok());
  EXPECT_FALSE((*db)->Exec("PRAGMA user_version = 1").ok());
}

TEST(SchemaTest, ReadOnlyOpenRefusesAnotherVersionAndLeavesItAlone) {
  TempDir dir;
  const std::string path = dir.File("onset.db");
  const auto set_version = [&](int version) {
    absl::StatusOr<std::unique_ptr<Connection>> db = Connection::Open(path);
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE((*db)->Exec("PRAGMA user_version = " + std::to_string(version)).ok());
  };
  ASSERT_TRUE(OpenDatabase(path).ok());

  set_version(LatestSchemaVersion() - 1);
  absl::Status older = OpenDatabaseReadOnly(path).status();
  EXPECT_EQ(older.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(older.message()), ::testing::HasSubstr(path));
  EXPECT_THAT(std::string(older.message()), ::testing::HasSubstr("older"));
  EXPECT_THAT(std::string(older.message()), ::testing::HasSubstr("onset run FILE"));
  {
    absl::StatusOr<std::unique_ptr<Connection>> db = Connection::Open(path);
    ASSERT_TRUE(db.ok());
    EXPECT_EQ(UserVersion(db->get()), LatestSchemaVersion() - 1);  // not migrated
  }

  set_version(LatestSchemaVersion() + 1);
  absl::Status newer = OpenDatabaseReadOnly(path).status();
  EXPECT_EQ(newer.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(newer.message()), ::testing::HasSubstr("newer"));

  const std::string empty = dir.File("empty.db");
  { std::ofstream created(empty); }
  absl::Status none = OpenDatabaseReadOnly(empty).status();
  EXPECT_EQ(none.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(none.message()), ::testing::HasSubstr("no onset tables"));
}

}  // namespace
}  // namespace onset::db
