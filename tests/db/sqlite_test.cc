#include "db/sqlite.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include "tests/testing/temp_dir.h"

namespace onset::db {
namespace {

using ::testing::HasSubstr;

TEST(SqliteTest, AFailedCallCarriesSqlitesOwnError) {
  testutil::TempDir dir;
  absl::StatusOr<std::unique_ptr<Connection>> db = Connection::Open(dir.File("a.db"));
  ASSERT_TRUE(db.ok());
  ASSERT_TRUE((*db)->Exec("CREATE TABLE t (k INTEGER PRIMARY KEY)").ok());
  ASSERT_TRUE((*db)->Exec("INSERT INTO t VALUES (1)").ok());
  absl::StatusOr<Statement> insert = (*db)->Prepare("INSERT INTO t VALUES (1)");
  ASSERT_TRUE(insert.ok());
  absl::Status s = insert->Run();
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(SqliteErrorOf(s).has_value());
  EXPECT_EQ(SqliteErrorOf(s)->code, SQLITE_CONSTRAINT_PRIMARYKEY);
  EXPECT_EQ(SqliteErrorOf(s)->message, "UNIQUE constraint failed: t.k");
  EXPECT_FALSE(SqliteErrorOf(absl::NotFoundError("x")).has_value());
}

TEST(SqliteTest, WritingAReadOnlyConnectionIsInternalNotUnavailable) {
  testutil::TempDir dir;
  absl::StatusOr<std::unique_ptr<Connection>> db = Connection::Open(dir.File("a.db"));
  ASSERT_TRUE(db.ok());
  ASSERT_TRUE((*db)->Exec("CREATE TABLE t (k INTEGER)").ok());
  EXPECT_FALSE((*db)->ReadOnly());
  ASSERT_TRUE((*db)->Exec("PRAGMA query_only=ON").ok());
  absl::Status s = (*db)->Exec("INSERT INTO t VALUES (1)");
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal);
  EXPECT_THAT(s.message(), HasSubstr("attempt to write a readonly database (running 'INSERT"));

  Connection::Options read_only;
  read_only.read_only = true;
  absl::StatusOr<std::unique_ptr<Connection>> reader =
      Connection::Open(dir.File("a.db"), read_only);
  ASSERT_TRUE(reader.ok());
  EXPECT_TRUE((*reader)->ReadOnly());
}

TEST(SqliteTest, AFileThatIsNotADatabaseIsNamedAsSuch) {
  testutil::TempDir dir;
  const std::string path = dir.File("notes.txt");
  {
    std::ofstream out(path);
    for (int i = 0; i < 100; ++i) out << "line " << i << "\n";
  }
  absl::StatusOr<std::unique_ptr<Connection>> db = Connection::Open(path);
  ASSERT_FALSE(db.ok());
  EXPECT_EQ(db.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(db.status().message(),
              HasSubstr(path + " is not an SQLite database (SQLite: file is not a database)"));
}

}  // namespace
}  // namespace onset::db
