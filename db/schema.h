// Opening the coordinator database at the schema version this binary knows.
#pragma once

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "db/sqlite.h"

namespace onset::db {

// The schema version this binary creates and expects (the last migration's number).
int LatestSchemaVersion();

// Brings the database to LatestSchemaVersion(): applies the missing migrations in order inside
// one BEGIN IMMEDIATE transaction and records the version in PRAGMA user_version. A database at
// the latest version is left untouched. Errors: FailedPrecondition when the database was
// written by a newer onset (its user_version is above ours); the database is not modified then.
absl::Status Migrate(Connection* db);

// Connection::Open + Migrate.
absl::StatusOr<std::unique_ptr<Connection>> OpenDatabase(
    const std::string& path, const Connection::Options& options = Connection::Options());

// Opens the existing database at `path` read-only (Connection::Options::read_only; nothing is
// created, migrated or written) and checks that it is at LatestSchemaVersion(). Errors: NotFound
// when there is no such file; FailedPrecondition when it holds no onset tables, or its schema is
// older (the message says that a coordinator upgrades it on its next start) or newer (use a newer
// onset); Unavailable/Internal naming the file otherwise.
absl::StatusOr<std::unique_ptr<Connection>> OpenDatabaseReadOnly(
    const std::string& path, Connection::Options options = Connection::Options());

}  // namespace onset::db
