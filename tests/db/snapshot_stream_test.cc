// The snapshot stream: the pieces of a database as of one commit, in order, of bounded size, which
// written at their offsets are a whole database in rollback-journal mode with the source's rows;
// a sink that stops ends the stream with its status and the source's read is let go.
#include "db/snapshot_stream.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <fstream>
#include <thread>
#include <vector>

#include "db/sqlite.h"
#include "tests/testing/temp_dir.h"

namespace onset::db {
namespace {

int64_t Count(Connection& db, const std::string& sql) {
  absl::StatusOr<Statement> stmt = db.Prepare(sql);
  EXPECT_TRUE(stmt.ok()) << stmt.status();
  absl::StatusOr<bool> row = stmt->Step();
  EXPECT_TRUE(row.ok() && *row);
  return stmt->Int(0);
}

// Keeps every piece in memory, as the file they make.
class Collect final : public SnapshotSink {
 public:
  absl::Status Start(const SnapshotInfo& info) override {
    info_ = info;
    ++starts_;
    return absl::OkStatus();
  }
  absl::Status Piece(int64_t offset, std::string_view bytes) override {
    offsets_.push_back(offset);
    max_piece_ = std::max(max_piece_, bytes.size());
    if (file_.size() < offset + bytes.size()) file_.resize(offset + bytes.size());
    file_.replace(static_cast<size_t>(offset), bytes.size(), bytes);
    if (++pieces_ == stop_after_) return absl::CancelledError("the reader went away");
    return absl::OkStatus();
  }

  SnapshotInfo info_;
  int starts_ = 0;
  int pieces_ = 0;
  int stop_after_ = -1;
  size_t max_piece_ = 0;
  std::vector<int64_t> offsets_;
  std::string file_;
};

// A WAL database of `rows` rows of 200 random bytes: tens of MB, more than SQLite's page cache.
std::unique_ptr<Connection> BigDatabase(const std::string& path, int rows) {
  absl::StatusOr<std::unique_ptr<Connection>> db = Connection::Open(path);
  EXPECT_TRUE(db.ok()) << db.status();
  EXPECT_TRUE((*db)
                  ->Exec("CREATE TABLE t (id INTEGER PRIMARY KEY AUTOINCREMENT, a TEXT, b BLOB);"
                         "CREATE INDEX t_a ON t (a)")
                  .ok());
  EXPECT_TRUE(
      (*db)
          ->Exec("WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < " +
                 std::to_string(rows) +
                 ") INSERT INTO t (a, b) SELECT hex(randomblob(8)), randomblob(200) FROM n")
          .ok());
  return *std::move(db);
}

TEST(SnapshotStreamTest, PiecesInOrderMakeTheWholeDatabaseInRollbackJournalMode) {
  testutil::TempDir dir;
  std::unique_ptr<Connection> db = BigDatabase(dir.File("src.db"), 100'000);
  const int64_t pages = Count(*db, "PRAGMA page_count");
  const int64_t page_size = Count(*db, "PRAGMA page_size");
  Collect sink;
  ASSERT_TRUE(StreamSnapshot(dir.File("src.db"), sink).ok());
  EXPECT_EQ(sink.starts_, 1);
  EXPECT_EQ(sink.info_.page_size, page_size);
  EXPECT_EQ(sink.info_.bytes, pages * page_size);
  EXPECT_EQ(static_cast<int64_t>(sink.file_.size()), sink.info_.bytes);
  EXPECT_LE(sink.max_piece_, kSnapshotPieceBytes);
  EXPECT_GT(sink.pieces_, 10);
  // Ascending, but for the header, which may come again at the end.
  int64_t last = -1;
  for (int64_t offset : sink.offsets_) {
    if (offset == 0 && last >= 0) continue;
    EXPECT_GT(offset, last);
    last = offset;
  }
  EXPECT_EQ(sink.file_[18], 1);  // rollback journal, although the source is in WAL mode
  EXPECT_EQ(sink.file_[19], 1);

  std::ofstream(dir.File("copy.db"), std::ios::binary) << sink.file_;
  Connection::Options read_only;
  read_only.read_only = true;
  absl::StatusOr<std::unique_ptr<Connection>> copy =
      Connection::Open(dir.File("copy.db"), read_only);
  ASSERT_TRUE(copy.ok()) << copy.status();
  absl::StatusOr<Statement> check = (*copy)->Prepare("PRAGMA integrity_check");
  ASSERT_TRUE(check.ok());
  ASSERT_TRUE(*check->Step());
  EXPECT_EQ(check->Text(0), "ok");
  EXPECT_EQ(Count(**copy, "SELECT COUNT(*) FROM t"), 100'000);
  EXPECT_EQ(Count(**copy, "SELECT seq FROM sqlite_sequence WHERE name = 't'"), 100'000);
  EXPECT_EQ(Count(**copy, "SELECT SUM(length(b)) FROM t"),
            Count(*db, "SELECT SUM(length(b)) FROM t"));
}

TEST(SnapshotStreamTest, TheCopyIsOneCommitWhileWritesGoOn) {
  testutil::TempDir dir;
  std::unique_ptr<Connection> db = BigDatabase(dir.File("src.db"), 20'000);
  std::atomic<bool> stop{false};
  std::thread writes([&] {
    absl::StatusOr<std::unique_ptr<Connection>> w = Connection::Open(dir.File("src.db"));
    ASSERT_TRUE(w.ok());
    // Two rows per commit: a copy that saw half a commit would hold an odd count.
    while (!stop) {
      ASSERT_TRUE((*w)->Exec("BEGIN IMMEDIATE; INSERT INTO t (a) VALUES ('x'); "
                             "INSERT INTO t (a) VALUES ('y'); COMMIT")
                      .ok());
    }
  });
  Collect sink;
  const absl::Status streamed = StreamSnapshot(dir.File("src.db"), sink);
  stop = true;
  writes.join();
  ASSERT_TRUE(streamed.ok()) << streamed;
  std::ofstream(dir.File("copy.db"), std::ios::binary) << sink.file_;
  absl::StatusOr<std::unique_ptr<Connection>> copy = Connection::Open(dir.File("copy.db"));
  ASSERT_TRUE(copy.ok());
  EXPECT_EQ(Count(**copy, "SELECT COUNT(*) FROM t WHERE a IN ('x', 'y')") % 2, 0);
  EXPECT_EQ(Count(**copy, "SELECT COUNT(*) FROM t WHERE a = 'x'"),
            Count(**copy, "SELECT COUNT(*) FROM t WHERE a = 'y'"));
}

TEST(SnapshotStreamTest, ASinkThatStopsEndsTheStreamWithItsStatusAndLetsTheReadGo) {
  testutil::TempDir dir;
  std::unique_ptr<Connection> db = BigDatabase(dir.File("src.db"), 20'000);
  Collect sink;
  sink.stop_after_ = 2;
  const absl::Status streamed = StreamSnapshot(dir.File("src.db"), sink);
  EXPECT_TRUE(absl::IsCancelled(streamed)) << streamed;
  EXPECT_EQ(streamed.message(), "the reader went away");
  EXPECT_EQ(sink.pieces_, 2);
  // No read transaction is left: a checkpoint can empty the WAL completely.
  ASSERT_TRUE(db->Exec("INSERT INTO t (a) VALUES ('after')").ok());
  absl::StatusOr<Statement> checkpoint = db->Prepare("PRAGMA wal_checkpoint(TRUNCATE)");
  ASSERT_TRUE(checkpoint.ok());
  ASSERT_TRUE(*checkpoint->Step());
  EXPECT_EQ(checkpoint->Int(0), 0) << "a reader still blocks the checkpoint";
}

TEST(SnapshotStreamTest, StreamsOfOneDatabaseRunAtOnce) {
  testutil::TempDir dir;
  std::unique_ptr<Connection> db = BigDatabase(dir.File("src.db"), 20'000);
  Collect a, b;
  absl::Status sa, sb;
  std::thread ta([&] { sa = StreamSnapshot(dir.File("src.db"), a); });
  std::thread tb([&] { sb = StreamSnapshot(dir.File("src.db"), b); });
  ta.join();
  tb.join();
  ASSERT_TRUE(sa.ok()) << sa;
  ASSERT_TRUE(sb.ok()) << sb;
  EXPECT_EQ(a.file_, b.file_);
}

TEST(SnapshotStreamTest, AMissingDatabaseIsNamed) {
  testutil::TempDir dir;
  Collect sink;
  const absl::Status streamed = StreamSnapshot(dir.File("nope.db"), sink);
  ASSERT_FALSE(streamed.ok());
  EXPECT_NE(std::string(streamed.message()).find("nope.db"), std::string::npos) << streamed;
  EXPECT_EQ(sink.starts_, 0);
}

}  // namespace
}  // namespace onset::db
