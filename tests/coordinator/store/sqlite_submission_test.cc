// Submissions on the real store (sqlite_studies.h): planned on a reader, written in bounded
// transactions, previewed without a write: a large submission or a dry run
// must not hold the single writer.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <string>

#include "common/fake_clock.h"
#include "coordinator/store/sqlite_store.h"
#include "coordinator/store/sqlite_studies.h"
#include "coordinator/study/study_file.h"
#include "tests/coordinator/test_util.h"
#include "tests/testing/temp_dir.h"

namespace onset::coordinator {
namespace {

using ::testing::HasSubstr;

// `seeds` cells of one tiny model.
NewStudy Study(int seeds, const std::string& name = "big") {
  const std::string yaml = "name: " + name +
                           "\nmodel: {layers: 2, d_model: 32, heads: 2, seq_len: 64}\n"
                           "train: {batch_tokens: 1K, micro_batch: 4}\n"
                           "eval: {every_tokens: 8K, heldout_seqs: 2, niah_lengths: [64], "
                           "niah_samples: 1}\n"
                           "grid:\n  arch: [full]\n  tokens: [8K]\n  seeds: " +
                           std::to_string(seeds) + "\n";
  absl::StatusOr<StudySpec> spec = ParseStudyFile(name + ".yaml", yaml);
  EXPECT_TRUE(spec.ok()) << spec.status();
  return NewStudy{spec->name, "", name + ".yaml", yaml, spec->cells};
}

class SqliteSubmissionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<SqliteStore>> store =
        SqliteStore::Open(dir_.File("onset.db"), clock_);
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = std::move(*store);
  }

  // Runs `sql` on its own connection to the database.
  void Exec(const std::string& sql) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(dir_.File("onset.db").c_str(), &db), SQLITE_OK);
    char* error = nullptr;
    EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error), SQLITE_OK)
        << (error ? error : "");
    sqlite3_free(error);
    sqlite3_close(db);
  }

  int StoredCells() {
    absl::StatusOr<StudyDetail> detail = store_->GetStudy("big");
    return detail.ok() ? static_cast<int>(detail->cells.size()) : 0;
  }

  testutil::TempDir dir_;
  common::FakeClock clock_;
  std::unique_ptr<SqliteStore> store_;
};

// A dry run reads only: it answers while another process holds the database's write lock (it
// took the writer, and so waited for that lock, before).
TEST_F(SqliteSubmissionTest, ADryRunNeedsNoWriteLock) {
  const NewStudy study = Study(50);
  sqlite3* holder = nullptr;
  ASSERT_EQ(sqlite3_open(dir_.File("onset.db").c_str(), &holder), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(holder, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr), SQLITE_OK);
  absl::StatusOr<AddStudyResult> preview = store_->PreviewStudy(study);
  sqlite3_exec(holder, "ROLLBACK", nullptr, nullptr, nullptr);
  sqlite3_close(holder);
  ASSERT_TRUE(preview.ok()) << preview.status();
  EXPECT_EQ(preview->cells_added, 50);
  EXPECT_EQ(StoredCells(), 0);
}

// A preview says exactly what the submission then does: counts, cells in the file's order, new
// ids, for a new study and for one that grows.
TEST_F(SqliteSubmissionTest, APreviewIsWhatTheSubmissionDoes) {
  for (int seeds : {3, 7}) {
    const NewStudy study = Study(seeds);
    absl::StatusOr<AddStudyResult> preview = store_->PreviewStudy(study);
    ASSERT_TRUE(preview.ok()) << preview.status();
    absl::StatusOr<AddStudyResult> added = store_->AddStudy(study);
    ASSERT_TRUE(added.ok()) << added.status();
    EXPECT_EQ(preview->cells_added, added->cells_added);
    EXPECT_EQ(preview->new_cell_ids, added->new_cell_ids);
    EXPECT_EQ(preview->study.cells_total, added->study.cells_total);
    EXPECT_EQ(preview->study.cells_by_state, added->study.cells_by_state);
    ASSERT_EQ(preview->cells.size(), added->cells.size());
    for (size_t i = 0; i < added->cells.size(); ++i) {
      EXPECT_EQ(preview->cells[i].id, added->cells[i].id);
      EXPECT_EQ(preview->cells[i].axes, added->cells[i].axes);
      EXPECT_EQ(preview->cells[i].state, added->cells[i].state);
      EXPECT_EQ(preview->cells[i].tokens_budget, added->cells[i].tokens_budget);
      EXPECT_EQ(preview->cells[i].devices, added->cells[i].devices);
      EXPECT_EQ(preview->cells[i].non_embedding_params, added->cells[i].non_embedding_params);
    }
  }
}

// A large submission is written in bounded transactions, each its own commit: one that fails
// midway (here a write the database refuses at the 1,500th cell, as a full disk would) keeps the
// ones before and says how far it got; the same file again adds the rest.
TEST_F(SqliteSubmissionTest, ALargeSubmissionIsWrittenInBoundedTransactions) {
  const NewStudy study = Study(2500);
  const std::string fails_at = study.cells[1500].id;
  Exec("CREATE TRIGGER refuse BEFORE INSERT ON cells WHEN NEW.hash = '" + fails_at +
       "' BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END");
  absl::StatusOr<AddStudyResult> added = store_->AddStudy(study);
  ASSERT_FALSE(added.ok());
  EXPECT_THAT(std::string(added.status().message()),
              HasSubstr("stored 1000 of its 2500 new cells, then:"));
  EXPECT_THAT(std::string(added.status().message()), HasSubstr("submitting the file again"));
  EXPECT_EQ(StoredCells(), static_cast<int>(SqliteStore::kSubmissionRowsPerWrite));
  Exec("DROP TRIGGER refuse");
  added = store_->AddStudy(study);
  ASSERT_TRUE(added.ok()) << added.status();
  EXPECT_EQ(added->cells_added, 1500);
  EXPECT_EQ(StoredCells(), 2500);
}

// The tag limit holds inside the write, not only in the plan: a submission planned while the
// study had room is refused by its write once another stored tags that fill it, and nothing of
// it is written.
TEST_F(SqliteSubmissionTest, TheTagLimitIsCheckedAgainInsideTheWrite) {
  NewStudy first = Study(3);
  ASSERT_TRUE(store_->AddStudy(first).ok());
  NewStudy late = Study(3);
  late.tags = {"late"};
  absl::StatusOr<std::unique_ptr<db::Connection>> db = db::Connection::Open(dir_.File("onset.db"));
  ASSERT_TRUE(db.ok()) << db.status();
  absl::StatusOr<studies::SubmissionWrites> planned = studies::PlanWrites(**db, late);
  ASSERT_TRUE(planned.ok()) << planned.status();
  NewStudy filler = Study(3);
  for (int i = 0; i < kMaxTags; ++i) filler.tags.push_back("t" + std::to_string(10 + i));
  ASSERT_TRUE(store_->AddStudy(filler).ok());

  ASSERT_TRUE((*db)->Exec("BEGIN IMMEDIATE").ok());
  absl::StatusOr<int64_t> applied = studies::ApplyStudy(**db, late, *planned, 0);
  ASSERT_TRUE((*db)->Exec("ROLLBACK").ok());
  EXPECT_EQ(applied.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(applied.status().message()),
              HasSubstr("study big has 32 tags and this file adds 1 more (late)"));
  absl::StatusOr<StudyDetail> detail = store_->GetStudy("big");
  ASSERT_TRUE(detail.ok());
  EXPECT_EQ(detail->study.tags.size(), static_cast<size_t>(kMaxTags));
}

}  // namespace
}  // namespace onset::coordinator
