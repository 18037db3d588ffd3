#include "coordinator/store/sqlite_store.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <mutex>
#include <set>
#include <thread>

#include "common/fake_clock.h"
#include "coordinator/study/study_file.h"
#include "db/sqlite.h"
#include "tests/coordinator/test_util.h"

namespace onset::coordinator {
namespace {

using ::testing::HasSubstr;
using testutil::TempDir;

NewStudy Study(const std::string& yaml) {
  absl::StatusOr<StudySpec> spec = ParseStudyFile("s.yaml", yaml);
  EXPECT_TRUE(spec.ok()) << spec.status();
  NewStudy study{spec->name, spec->description, spec->source_name, spec->source_yaml, spec->cells};
  study.tags = spec->tags;
  return study;
}

class SqliteStoreTest : public ::testing::Test {
 protected:
  // A file, so that reads take the reader connections as in onsetd (an in-memory database
  // reads through the writer; SqliteStoreInMemoryTest covers it).
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<SqliteStore>> store =
        SqliteStore::Open(dir_.File("onset.db"), clock_);
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = std::move(*store);
    absl::StatusOr<std::string> worker =
        testing::WorkerId(store_->RegisterWorker({"host-a", 2, "0.1"}));
    ASSERT_TRUE(worker.ok()) << worker.status();
    worker_ = *worker;
  }

  ClaimedJob Claim() {
    absl::StatusOr<std::optional<ClaimedJob>> job = store_->ClaimNextCell(worker_, {"cpu:0"});
    EXPECT_TRUE(job.ok()) << job.status();
    EXPECT_TRUE(job->has_value());
    return job->value_or(ClaimedJob{});
  }

  CellInfo Cell(const std::string& id) { return testing::FindCell(*store_, "small", id); }

  TempDir dir_;
  common::FakeClock clock_;
  std::unique_ptr<SqliteStore> store_;
  std::string worker_;
};

TEST(SqliteStoreInMemoryTest, ReadsSeeEveryWrite) {
  common::FakeClock clock;
  absl::StatusOr<std::unique_ptr<SqliteStore>> store = SqliteStore::Open(":memory:", clock);
  ASSERT_TRUE(store.ok()) << store.status();
  ASSERT_TRUE((*store)->AddStudy(Study(testing::kSmallStudy)).ok());
  absl::StatusOr<StudyDetail> detail = (*store)->GetStudy("small");
  ASSERT_TRUE(detail.ok()) << detail.status();
  EXPECT_EQ(detail->cells.size(), 6u);
  absl::StatusOr<std::string> worker = testing::WorkerId((*store)->RegisterWorker({"h", 1, "v"}));
  ASSERT_TRUE(worker.ok());
  absl::StatusOr<std::optional<ClaimedJob>> job = (*store)->ClaimNextCell(*worker, {"cpu:0"});
  ASSERT_TRUE(job.ok() && job->has_value());
  EXPECT_EQ(testing::FindCell(**store, "small", (*job)->cell_id).state, CellState::kRunning);
}

// The health probe writes the liveness row through the writer, at the clock's time.
TEST_F(SqliteStoreTest, TheHealthProbeRewritesTheLivenessRow) {
  ASSERT_TRUE(store_->ProbeWrite().ok());
  clock_.Advance(std::chrono::seconds(5));
  ASSERT_TRUE(store_->ProbeWrite().ok());
  absl::StatusOr<std::unique_ptr<db::Connection>> db = db::Connection::Open(dir_.File("onset.db"));
  ASSERT_TRUE(db.ok()) << db.status();
  absl::StatusOr<db::Statement> rows =
      (*db)->Prepare("SELECT COUNT(*), MAX(at_unix_ms) FROM liveness");
  ASSERT_TRUE(rows.ok() && *rows->Step());
  EXPECT_EQ(rows->Int(0), 1);
  EXPECT_EQ(rows->Int(1), clock_.WallUnixMs());
}

TEST_F(SqliteStoreTest, AddStudyIsIdempotentAndAddsOnlyNewCells) {
  absl::StatusOr<AddStudyResult> first = store_->AddStudy(Study(testing::kSmallStudy));
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->cells_added, 6);
  EXPECT_EQ(first->cells.size(), 6u);
  EXPECT_EQ(first->study.cells_total, 6);
  EXPECT_EQ(first->study.cells_by_state.at("queued"), 6);
  EXPECT_EQ(first->study.created_unix_ms, clock_.WallUnixMs());

  absl::StatusOr<AddStudyResult> again = store_->AddStudy(Study(testing::kSmallStudy));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->cells_added, 0);
  EXPECT_EQ(again->study.cells_total, 6);

  // The same name with a third seed: only the 3 seed-2 cells are new.
  std::string more = testing::kSmallStudy;
  more.replace(more.find("seeds: 2"), 8, "seeds: 3");
  absl::StatusOr<AddStudyResult> grown = store_->AddStudy(Study(more));
  ASSERT_TRUE(grown.ok());
  EXPECT_EQ(grown->cells_added, 3);
  EXPECT_EQ(grown->cells.size(), 9u);
  EXPECT_EQ(grown->study.cells_total, 9);
  EXPECT_EQ(grown->study.source_yaml, more);

  absl::StatusOr<std::vector<StudyInfo>> studies = store_->ListStudies();
  ASSERT_TRUE(studies.ok());
  ASSERT_EQ(studies->size(), 1u);
  EXPECT_EQ(studies->front().name, "small");
}

TEST_F(SqliteStoreTest, AStudyIsAppendOnly) {
  ASSERT_TRUE(store_->AddStudy(Study(testing::kSmallStudy)).ok());
  // The same grid points with another learning rate: refused, and nothing written.
  std::string changed = testing::kSmallStudy;
  changed.replace(changed.find("batch_tokens: 512"), 17, "batch_tokens: 512\n  lr: 0.001");
  absl::StatusOr<AddStudyResult> refused = store_->AddStudy(Study(changed));
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(refused.status().message()),
              HasSubstr("cell arch=full window=- pos=rope tokens=64000 seed=0 exists with "
                        "train.lr = 0.003; this file gives 0.001: add train.lr as an axis"));
  absl::StatusOr<StudyDetail> detail = store_->GetStudy("small");
  ASSERT_TRUE(detail.ok());
  EXPECT_EQ(detail->study.cells_total, 6);
  EXPECT_EQ(detail->study.source_yaml, testing::kSmallStudy);

  // Made an axis, the learning rate adds cells; the stored ones (lr 0.003) stay and are shown
  // with the new axis.
  std::string axis = testing::kSmallStudy;
  axis.replace(axis.find("seeds: 2"), 8, "seeds: 2\n  train.lr: [0.001, 0.003]");
  absl::StatusOr<AddStudyResult> grown = store_->AddStudy(Study(axis));
  ASSERT_TRUE(grown.ok()) << grown.status();
  EXPECT_EQ(grown->cells_added, 6);
  EXPECT_EQ(grown->new_cell_ids.size(), 6u);
  EXPECT_EQ(grown->study.cells_total, 12);
  for (const CellInfo& cell : grown->cells) EXPECT_EQ(cell.axes.count("train.lr"), 1u) << cell.id;
}

// Tags only grow; the description is kept when a resubmission leaves it out, and a different
// one is refused with nothing written.
TEST_F(SqliteStoreTest, TagsGrowAndTheDescriptionNeverChangesSilently) {
  const std::string first =
      std::string("description: one sentence\ntags: [b, a]\n") + testing::kSmallStudy;
  absl::StatusOr<AddStudyResult> added = store_->AddStudy(Study(first));
  ASSERT_TRUE(added.ok()) << added.status();
  EXPECT_EQ(added->study.description, "one sentence");
  EXPECT_EQ(added->study.tags, (std::vector<std::string>{"a", "b"}));

  // Left out: the stored description stays; a new tag joins, none leaves.
  const std::string second = std::string("tags: [c]\n") + testing::kSmallStudy;
  absl::StatusOr<AddStudyResult> preview = store_->PreviewStudy(Study(second));
  ASSERT_TRUE(preview.ok()) << preview.status();
  EXPECT_EQ(preview->study.tags, (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(preview->study.description, "one sentence");
  ASSERT_TRUE(store_->AddStudy(Study(second)).ok());
  absl::StatusOr<std::vector<StudyInfo>> listed = store_->ListStudies();
  ASSERT_TRUE(listed.ok() && listed->size() == 1u);
  EXPECT_EQ((*listed)[0].description, "one sentence");
  EXPECT_EQ((*listed)[0].tags, (std::vector<std::string>{"a", "b", "c"}));

  // Repeated as it is: fine. Another text: refused, and the tags it brings are not stored.
  ASSERT_TRUE(store_->AddStudy(Study(first)).ok());
  const std::string changed =
      std::string("description: another sentence\ntags: [d]\n") + testing::kSmallStudy;
  for (bool dry_run : {true, false}) {
    absl::StatusOr<AddStudyResult> refused =
        dry_run ? store_->PreviewStudy(Study(changed)) : store_->AddStudy(Study(changed));
    EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_THAT(std::string(refused.status().message()),
                HasSubstr("study small is described as 'one sentence'; this file says 'another "
                          "sentence': a study's description does not change"));
  }
  absl::StatusOr<StudyDetail> detail = store_->GetStudy("small");
  ASSERT_TRUE(detail.ok());
  EXPECT_EQ(detail->study.description, "one sentence");
  EXPECT_EQ(detail->study.tags, (std::vector<std::string>{"a", "b", "c"}));
}

// `n` tags "PREFIX0".."PREFIX{n-1}" as a study file writes them.
std::string TagsLine(const std::string& prefix, int n) {
  std::string line = "tags: [";
  for (int i = 0; i < n; ++i) line += (i ? ", " : "") + prefix + std::to_string(i);
  return line + "]\n";
}

// A study keeps at most kMaxTags tags over all its submissions: one whose new tags would take it
// past that is refused, dry run or not, naming the study, its count and the limit, with nothing
// written; naming only tags it has passes.
TEST_F(SqliteStoreTest, TagsThatWouldTakeAStudyPastTheLimitAreRefused) {
  ASSERT_TRUE(store_->AddStudy(Study(TagsLine("a", kMaxTags - 2) + testing::kSmallStudy)).ok());
  // Two more fill it.
  ASSERT_TRUE(store_->AddStudy(Study(TagsLine("b", 2) + testing::kSmallStudy)).ok());
  const std::string past = TagsLine("c", 1) + testing::kSmallStudy;
  for (bool dry_run : {true, false}) {
    absl::StatusOr<AddStudyResult> refused =
        dry_run ? store_->PreviewStudy(Study(past)) : store_->AddStudy(Study(past));
    EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_THAT(std::string(refused.status().message()),
                HasSubstr("study small has 32 tags and this file adds 1 more (c0): a study keeps "
                          "at most 32 tags"));
  }
  // A whole new set at once: refused too, and the count shown is the stored one.
  absl::StatusOr<AddStudyResult> refused =
      store_->AddStudy(Study(TagsLine("d", kMaxTags) + testing::kSmallStudy));
  EXPECT_THAT(std::string(refused.status().message()),
              HasSubstr("has 32 tags and this file adds 32 more (d0, d1, d10, d11, d12, ...)"));
  // Tags it has: fine.
  ASSERT_TRUE(store_->AddStudy(Study(TagsLine("b", 2) + testing::kSmallStudy)).ok());
  absl::StatusOr<StudyDetail> detail = store_->GetStudy("small");
  ASSERT_TRUE(detail.ok());
  EXPECT_EQ(detail->study.tags.size(), static_cast<size_t>(kMaxTags));
  EXPECT_EQ(std::count(detail->study.tags.begin(), detail->study.tags.end(), "c0"), 0);
}

// A new study given more tags than the limit (not from a study file, which refuses them) is
// refused by the store all the same.
TEST_F(SqliteStoreTest, ANewStudyWithMoreTagsThanTheLimitIsRefused) {
  NewStudy study = Study(testing::kSmallStudy);
  for (int i = 0; i <= kMaxTags; ++i) study.tags.push_back("t" + std::to_string(100 + i));
  EXPECT_EQ(store_->AddStudy(study).status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(store_->GetStudy("small").status().code(), absl::StatusCode::kNotFound);
}

TEST_F(SqliteStoreTest, CellsKeepTheValuesTheyStandForAndSizeTheirModels) {
  const std::string yaml = R"yaml(name: pos
model: {layers: 4, d_model: 32, heads: 2, seq_len: 64}
train: {tokens: 64K, batch_tokens: 512}
grid:
  arch: [full, swa]
  window: [16]
  pos: [rope, nope]
)yaml";
  absl::StatusOr<AddStudyResult> first = store_->AddStudy(Study(yaml));
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_EQ(first->cells.size(), 4u);
  const CellInfo& full_nope = first->cells[1];
  ASSERT_EQ(full_nope.axes.at("pos"), "nope");
  EXPECT_EQ(full_nope.axis_aliases,
            (std::map<std::string, std::vector<std::string>>{{"window", {"16"}}}));

  // The file now also asks for nope-full: for full attention that is the stored nope cell,
  // which keeps what it stood for and records the new value; no cell is added for it.
  std::string more = yaml;
  more.replace(more.find("[rope, nope]"), 12, "[rope, nope-full, nope]");
  absl::StatusOr<AddStudyResult> grown = store_->AddStudy(Study(more));
  ASSERT_TRUE(grown.ok()) << grown.status();
  EXPECT_EQ(grown->cells_added, 1);  // swa nope-full
  const CellInfo stored = testing::FindCell(*store_, "pos", full_nope.id);
  EXPECT_EQ(stored.axis_aliases, (std::map<std::string, std::vector<std::string>>{
                                     {"pos", {"nope-full"}}, {"window", {"16"}}}));
  EXPECT_EQ(stored.axes.count("aliases"), 0u);  // not an axis

  // Each cell is sized from its config.
  absl::StatusOr<StudyDetail> detail = store_->GetStudy("pos");
  ASSERT_TRUE(detail.ok());
  for (const CellInfo& cell : detail->cells) {
    // d_model 32, 4 layers, SwiGLU hidden 96, 2 heads of 16, vocab 264 (not counted):
    // per layer 2 * 32 norms + 3 * 32 * 96 MLP + 32 * 96 qkv + 32 * 32 out + 2 * 16 QK-norm.
    EXPECT_EQ(cell.non_embedding_params, 32 + 4 * (64 + 9216 + 3072 + 1024 + 32)) << cell.id;
    EXPECT_GT(cell.train_flops_per_token, 6.0 * cell.non_embedding_params) << cell.id;
  }
}

TEST_F(SqliteStoreTest, ACellStoredBeforeItsCostWasIsSizedFromItsConfig) {
  ASSERT_TRUE(store_->AddStudy(Study(testing::kSmallStudy)).ok());
  const std::vector<CellInfo> stored = store_->GetStudy("small")->cells;
  // As a database from before schema version 4 holds it: no cost columns set.
  {
    absl::StatusOr<std::unique_ptr<db::Connection>> raw =
        db::Connection::Open(dir_.File("onset.db"));
    ASSERT_TRUE(raw.ok()) << raw.status();
    ASSERT_TRUE((*raw)
                    ->Exec("UPDATE cells SET non_embedding_params = NULL, "
                           "train_flops_per_token = NULL")
                    .ok());
  }
  const std::vector<CellInfo> read = store_->GetStudy("small")->cells;
  ASSERT_EQ(read.size(), stored.size());
  for (size_t i = 0; i < read.size(); ++i) {
    EXPECT_GT(read[i].non_embedding_params, 0);
    EXPECT_EQ(read[i].non_embedding_params, stored[i].non_embedding_params);
    EXPECT_DOUBLE_EQ(read[i].train_flops_per_token, stored[i].train_flops_per_token);
  }
}

TEST_F(SqliteStoreTest, ACellIsNamedByAUniquePrefixOfItsId) {
  ASSERT_TRUE(store_->AddStudy(Study(testing::kSmallStudy)).ok());
  const std::vector<CellInfo> cells = store_->GetStudy("small")->cells;
  ASSERT_GE(cells.size(), 3u);
  // Two cells made to share a prefix, as ids sometimes do.
  {
    absl::StatusOr<std::unique_ptr<db::Connection>> raw =
        db::Connection::Open(dir_.File("onset.db"));
    ASSERT_TRUE(raw.ok()) << raw.status();
    ASSERT_TRUE(
        (*raw)
            ->Exec("UPDATE cells SET hash = 'abcd100000000000' WHERE hash = '" + cells[1].id + "'")
            .ok());
    ASSERT_TRUE(
        (*raw)
            ->Exec("UPDATE cells SET hash = 'abcd200000000000' WHERE hash = '" + cells[2].id + "'")
            .ok());
  }
  const std::string full = cells[0].id;
  absl::StatusOr<std::vector<std::string>> resolved =
      store_->ResolveCellIds("small", {full.substr(0, 6), full, "abcd1", "abcd200000000000"});
  ASSERT_TRUE(resolved.ok()) << resolved.status();
  EXPECT_EQ(*resolved,
            (std::vector<std::string>{full, full, "abcd100000000000", "abcd200000000000"}));

  absl::StatusOr<std::vector<std::string>> ambiguous = store_->ResolveCellIds("small", {"abcd"});
  EXPECT_EQ(ambiguous.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(ambiguous.status().message(),
              HasSubstr("abcd100000000000, abcd200000000000; give more digits"));
  EXPECT_EQ(store_->ResolveCellIds("small", {"ffff0"}).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(store_->ResolveCellIds("small", {"ab"}).status().code(),
            absl::StatusCode::kInvalidArgument);  // too short to be meant
  EXPECT_EQ(store_->ResolveCellIds("small", {"ABCD"}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->ResolveCellIds("small", {"ab%_"}).status().code(),
            absl::StatusCode::kInvalidArgument);  // data, never a pattern
  EXPECT_EQ(store_->ResolveCellIds("nope", {"abcd"}).status().code(), absl::StatusCode::kNotFound);
  // Full ids are passed as they are, without a read.
  EXPECT_EQ(*store_->ResolveCellIds("nope", {"0123456789abcdef"}),
            std::vector<std::string>{"0123456789abcdef"});
}

TEST_F(SqliteStoreTest, PagesHoldEveryCellOnceInQueueOrderWithItsResults) {
  ASSERT_TRUE(store_->AddStudy(Study(testing::kSmallStudy)).ok());  // 6 cells
  const std::string other = R"yaml(name: other
model: {layers: 4, d_model: 32, heads: 2, seq_len: 64}
train: {tokens: 64K, batch_tokens: 512}
grid:
  seeds: 3
)yaml";
  ASSERT_TRUE(store_->AddStudy(Study(other)).ok());
  // Then a third seed for "small": its queue positions now have the other study's between.
  std::string grown = testing::kSmallStudy;
  grown.replace(grown.find("seeds: 2"), 8, "seeds: 3");
  ASSERT_TRUE(store_->AddStudy(Study(grown)).ok());
  const std::vector<CellInfo> all = store_->GetStudy("small")->cells;
  ASSERT_EQ(all.size(), 9u);
  // Metrics on the first two cells (claims go in queue order).
  for (int i = 0; i < 2; ++i) {
    absl::StatusOr<std::optional<ClaimedJob>> job = store_->ClaimNextCell(worker_, {"cpu:0"});
    ASSERT_TRUE(job.ok() && *job);
    ASSERT_TRUE(store_->AddMetrics((*job)->lease_id, {{"train/loss", 64, 1.5}}).ok());
    AttemptEnd end;
    end.outcome = AttemptOutcome::kSucceeded;
    ASSERT_TRUE(store_->FinishAttempt((*job)->lease_id, end).ok());
  }

  std::vector<std::string> ids, result_ids;
  std::map<std::string, int> with_loss;
  CellPage page{0, 4};
  CellPage results_page{0, 4};
  for (int pages = 0; pages < 10; ++pages) {
    absl::StatusOr<StudyDetail> detail = store_->GetStudy("small", page);
    ASSERT_TRUE(detail.ok()) << detail.status();
    EXPECT_LE(detail->cells.size(), 4u);
    EXPECT_EQ(detail->study.cells_total, 9);
    for (const CellInfo& c : detail->cells) ids.push_back(c.id);
    absl::StatusOr<ResultPage> results = store_->Results("small", results_page);
    ASSERT_TRUE(results.ok()) << results.status();
    for (const CellResult& r : results->results) {
      result_ids.push_back(r.cell.id);
      with_loss[r.cell.id] = static_cast<int>(r.final_metrics.count("train/loss"));
    }
    EXPECT_EQ(results->next_after, detail->next_after);
    if (detail->next_after == 0) break;
    page.after = detail->next_after;
    results_page.after = results->next_after;
  }
  std::vector<std::string> expected;
  for (const CellInfo& c : all) expected.push_back(c.id);
  EXPECT_EQ(ids, expected);
  EXPECT_EQ(result_ids, expected);
  // The cells that ran first in queue order: the first two of the study.
  EXPECT_EQ(with_loss[expected[0]], 1);
  EXPECT_EQ(with_loss[expected[1]], 1);
  EXPECT_EQ(with_loss[expected[2]], 0);
  EXPECT_EQ(with_loss[expected[8]], 0);
}

TEST_F(SqliteStoreTest, PreviewStudyWritesNothing) {
  absl::StatusOr<AddStudyResult> preview = store_->PreviewStudy(Study(testing::kSmallStudy));
  ASSERT_TRUE(preview.ok()) << preview.status();
  EXPECT_EQ(preview->cells_added, 6);
  EXPECT_EQ(preview->new_cell_ids.size(), 6u);
  EXPECT_EQ(preview->cells.size(), 6u);
  EXPECT_EQ(preview->study.name, "small");
  EXPECT_EQ(store_->GetStudy("small").status().code(), absl::StatusCode::kNotFound);

  ASSERT_TRUE(store_->AddStudy(Study(testing::kSmallStudy)).ok());
  std::string more = testing::kSmallStudy;
  more.replace(more.find("seeds: 2"), 8, "seeds: 3");
  preview = store_->PreviewStudy(Study(more));
  ASSERT_TRUE(preview.ok()) << preview.status();
  EXPECT_EQ(preview->cells_added, 3);
  EXPECT_EQ(preview->cells.size(), 9u);
  for (const std::string& id : preview->new_cell_ids) {
    auto it = std::find_if(preview->cells.begin(), preview->cells.end(),
                           [&](const CellInfo& c) { return c.id == id; });
    ASSERT_NE(it, preview->cells.end());
    EXPECT_EQ(it->axes.at("seed"), "2");
  }
  absl::StatusOr<StudyDetail> detail = store_->GetStudy("small");
  ASSERT_TRUE(detail.ok());
  EXPECT_EQ(detail->study.cells_total, 6);
  EXPECT_EQ(detail->study.source_yaml, testing::kSmallStudy);

  // A refused submission is refused in preview too.
  std::string changed = testing::kSmallStudy;
  changed.replace(changed.find("layers: 4"), 9, "layers: 8");
  EXPECT_EQ(store_->PreviewStudy(Study(changed)).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST_F(SqliteStoreTest, GetStudyOfAnUnknownNameIsNotFound) {
  EXPECT_EQ(store_->GetStudy("nope").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(store_->Results("nope").status().code(), absl::StatusCode::kNotFound);
}

TEST_F(SqliteStoreTest, ClaimRunsTheFirstQueuedCellUnderAFreshLease) {
  ASSERT_TRUE(store_->AddStudy(Study(testing::kSmallStudy)).ok());
  absl::StatusOr<StudyDetail> detail = store_->GetStudy("small");
  ASSERT_TRUE(detail.ok());
  ClaimedJob a = Claim();
  ClaimedJob b = Claim();
  EXPECT_EQ(a.cell_id, detail->cells[0].id);
  EXPECT_EQ(b.cell_id, detail->cells[1].id);
  EXPECT_EQ(a.attempt, 1);
  EXPECT_EQ(a.study, "small");
  EXPECT_EQ(a.lease_id.size(), 32u);
  EXPECT_NE(a.lease_id, b.lease_id);
  EXPECT_THAT(a.config_json, HasSubstr("\"study\":\"small\""));
  EXPECT_EQ(a.tokens_budget, 64'000);

  CellInfo cell = Cell(a.cell_id);
  EXPECT_EQ(cell.state, CellState::kRunning);
  EXPECT_EQ(cell.attempts, 1);
  absl::StatusOr<std::vector<RunningAttempt>> running = store_->RunningAttempts();
  ASSERT_TRUE(running.ok());
  ASSERT_EQ(running->size(), 2u);
  EXPECT_EQ((*running)[0].lease_id, a.lease_id);
  EXPECT_EQ((*running)[0].worker_id, worker_);
}

TEST_F(SqliteStoreTest, ClaimWithNothingQueuedOrAnUnknownWorker) {
  absl::StatusOr<std::optional<ClaimedJob>> none = store_->ClaimNextCell(worker_, {"cpu:0"});
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  ASSERT_TRUE(store_->AddStudy(Study(testing::kSmallStudy)).ok());
  EXPECT_EQ(store_->ClaimNextCell("w-unknown", {"cpu:0"}).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST_F(SqliteStoreTest, FinishSucceededAndFailed) {
  ASSERT_TRUE(store_->AddStudy(Study(testing::kSmallStudy)).ok());
  ClaimedJob ok = Claim();
  ClaimedJob bad = Claim();
  ASSERT_TRUE(store_->FinishAttempt(ok.lease_id, {AttemptOutcome::kSucceeded, 0, 0, "", ""}).ok());
  ASSERT_TRUE(store_
                  ->FinishAttempt(bad.lease_id, {AttemptOutcome::kFailed, std::nullopt, 9,
                                                 "killed by SIGKILL", "oom\n"})
                  .ok());
  EXPECT_EQ(Cell(ok.cell_id).state, CellState::kSucceeded);
  EXPECT_EQ(Cell(ok.cell_id).last_error, "");
  // A crash: retried after the policy's backoff (failure_policy.h), one failure counted.
  EXPECT_EQ(Cell(bad.cell_id).state, CellState::kBackoff);
  EXPECT_EQ(Cell(bad.cell_id).failures, 1);
  EXPECT_EQ(Cell(bad.cell_id).retry_at_unix_ms,
            clock_.WallUnixMs() + RetryPolicy().base_backoff.count());
  EXPECT_EQ(Cell(bad.cell_id).last_error, "killed by SIGKILL");

  // An ended lease cannot be used again.
  EXPECT_EQ(store_->FinishAttempt(ok.lease_id, {}).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(store_->RecordProgress(ok.lease_id, 1, 1).status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(store_->AddMetrics(bad.lease_id, {{"train/loss", 1, 1.0}}).status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(store_->ExpireAttempt("no-such-lease", "x", 0).code(),
            absl::StatusCode::kFailedPrecondition);
  absl::StatusOr<std::vector<RunningAttempt>> running = store_->RunningAttempts();
  ASSERT_TRUE(running.ok());
  EXPECT_TRUE(running->empty());
}

TEST_F(SqliteStoreTest, RequeueMakesTheCellClaimableAsTheNextAttempt) {
  ASSERT_TRUE(store_->AddStudy(Study(testing::kSmallStudy)).ok());
  ClaimedJob first = Claim();
  ASSERT_TRUE(store_->RecordProgress(first.lease_id, 100, 1).ok());  // its worker had it
  ASSERT_TRUE(store_->ExpireAttempt(first.lease_id, "lease expired", 0).ok());
  CellInfo cell = Cell(first.cell_id);
  EXPECT_EQ(cell.state, CellState::kBackoff);  // a lost worker counts like a crash
  EXPECT_EQ(cell.failures, 1);
  EXPECT_EQ(cell.last_error, "lease expired");
  clock_.Advance(RetryPolicy().base_backoff);
  ClaimedJob second = Claim();  // queue order: the requeued cell is first again
  EXPECT_EQ(second.cell_id, first.cell_id);
  EXPECT_EQ(second.attempt, 2);
  EXPECT_NE(second.lease_id, first.lease_id);
  EXPECT_EQ(Cell(first.cell_id).attempts, 2);
}

// An attempt resumes from the newest checkpoint its cell's lineage recorded, named by the attempt
// that wrote it; what the cell reported past it is trained again and goes.
TEST_F(SqliteStoreTest, AClaimNamesTheRecordedCheckpointsAndDropsThePointsPastTheNewest) {
  ASSERT_TRUE(store_->AddStudy(Study(testing::kSmallStudy)).ok());
  ClaimedJob first = Claim();
  EXPECT_TRUE(first.resume_from.empty());
  ASSERT_TRUE(store_
                  ->AddMetrics(first.lease_id, {{"checkpoint/bytes", 1000, 10},
                                                {"checkpoint/bytes", 2000, 10},
                                                {"train/loss", 2000, 3.0},
                                                {"train/loss", 2500, 2.5}})
                  .ok());
  ASSERT_TRUE(
      store_->FinishAttempt(first.lease_id, {AttemptOutcome::kHandedBack, 4, 0, "", ""}).ok());
  ClaimedJob second = Claim();
  ASSERT_EQ(second.cell_id, first.cell_id);
  ASSERT_EQ(second.resume_from.size(), 2u);
  EXPECT_EQ(second.resume_from[0].attempt, 1);
  EXPECT_EQ(second.resume_from[0].tokens, 2000);
  EXPECT_TRUE(second.resume_from[0].own_dir);
  EXPECT_EQ(second.resume_from[1].tokens, 1000);
  EXPECT_FALSE(second.fresh);
  std::vector<int64_t> loss;
  ASSERT_TRUE(store_
                  ->ForEachMetricPoint(
                      "small", {"train/loss"}, {first.cell_id},
                      [&](const std::string&, const std::string&, int64_t tokens, double, int64_t) {
                        loss.push_back(tokens);
                        return true;
                      })
                  .ok());
  EXPECT_EQ(loss, (std::vector<int64_t>{2000}));
  // The trainer says it could only use the older one: what the other attempt reported past it
  // goes too, this attempt's own points stay.
  ASSERT_TRUE(store_
                  ->AddMetrics(second.lease_id,
                               {{"train/resumed_at_tokens", 1000, 1000}, {"train/loss", 1500, 2.9}})
                  .ok());
  loss.clear();
  ASSERT_TRUE(store_
                  ->ForEachMetricPoint(
                      "small", {"train/loss", "checkpoint/bytes"}, {first.cell_id},
                      [&](const std::string&, const std::string&, int64_t tokens, double, int64_t) {
                        loss.push_back(tokens);
                        return true;
                      })
                  .ok());
  EXPECT_EQ(loss, (std::vector<int64_t>{1000, 1500}));
}

// DescribeCell: the cell, the config its attempts are given, and the checkpoints its lineage
// recorded, the newest first; NotFound for a cell or study that is not there.
TEST_F(SqliteStoreTest, ACellIsDescribedWithItsConfigAndCheckpoints) {
  ASSERT_TRUE(store_->AddStudy(Study(testing::kSmallStudy)).ok());
  ClaimedJob job = Claim();
  ASSERT_TRUE(store_
                  ->AddMetrics(job.lease_id, {{"checkpoint/bytes", 1000, 10},
                                              {"checkpoint/bytes", 2000, 10},
                                              {"train/loss", 2000, 3.0}})
                  .ok());
  absl::StatusOr<CellOutputs> described = store_->DescribeCell("small", job.cell_id);
  ASSERT_TRUE(described.ok()) << described.status();
  EXPECT_EQ(described->cell.id, job.cell_id);
  EXPECT_EQ(described->cell.state, CellState::kRunning);
  EXPECT_EQ(described->config_json, job.config_json);
  ASSERT_EQ(described->checkpoints.size(), 2u);
  EXPECT_EQ(described->checkpoints[0].tokens, 2000);
  EXPECT_EQ(described->checkpoints[0].attempt, 1);
  EXPECT_EQ(described->checkpoints[1].tokens, 1000);
  EXPECT_TRUE(absl::IsNotFound(store_->DescribeCell("small", "0000000000000000").status()));
  EXPECT_TRUE(absl::IsNotFound(store_->DescribeCell("nope", job.cell_id).status()));
}

// RecordExport: a cell's exports, the newest first, the newest kMaxCellExports kept; NotFound for
// a cell or study that is not there.
TEST_F(SqliteStoreTest, ExportsAreRecordedNewestFirstAndBounded) {
  ASSERT_TRUE(store_->AddStudy(Study(testing::kSmallStudy)).ok());
  ClaimedJob job = Claim();
  for (int i = 0; i < kMaxCellExports + 3; ++i) {
    ASSERT_TRUE(store_
                    ->RecordExport("small", job.cell_id,
                                   {"hf", "host", "/out/" + std::to_string(i), 100 + i, 2000, 0})
                    .ok());
  }
  absl::StatusOr<CellOutputs> described = store_->DescribeCell("small", job.cell_id);
  ASSERT_TRUE(described.ok()) << described.status();
  ASSERT_EQ(described->exports.size(), static_cast<size_t>(kMaxCellExports));
  EXPECT_EQ(described->exports.front().path, "/out/" + std::to_string(kMaxCellExports + 2));
  EXPECT_EQ(described->exports.front().bytes, 100 + kMaxCellExports + 2);
  EXPECT_EQ(described->exports.front().format, "hf");
  EXPECT_EQ(described->exports.front().tokens, 2000);
  EXPECT_GT(described->exports.front().at_unix_ms, 0);
  EXPECT_EQ(described->exports.back().path, "/out/3");
  EXPECT_TRUE(absl::IsNotFound(
      store_->RecordExport("small", "0000000000000000", {"hf", "h", "/x", 1, 0, 0})));
  EXPECT_TRUE(
      absl::IsNotFound(store_->RecordExport("nope", job.cell_id, {"hf", "h", "/x", 1, 0, 0})));
}

// A claim whose reply never reached its worker (no call
// ever named the lease) costs the cell nothing, however often it happens, and the cell waits out
// the stop margin before anyone claims it again.
TEST_F(SqliteStoreTest, AClaimItsWorkerNeverConfirmedIsRequeuedWithoutAFailure) {
  ASSERT_TRUE(store_->AddStudy(Study(testing::kSmallStudy)).ok());
  std::string cell_id;
  for (int i = 1; i <= 5; ++i) {
    ClaimedJob job = Claim();
    if (i == 1) cell_id = job.cell_id;
    ASSERT_EQ(job.cell_id, cell_id);
    ASSERT_TRUE(store_->ExpireAttempt(job.lease_id, "lease expired", 2'000).ok());
    CellInfo cell = Cell(cell_id);
    EXPECT_EQ(cell.state, CellState::kBackoff);
    EXPECT_EQ(cell.failures, 0);
    EXPECT_EQ(cell.retry_at_unix_ms, clock_.WallUnixMs() + 2'000);
    EXPECT_THAT(cell.last_error, ::testing::HasSubstr("never confirmed the claim"));
    clock_.Advance(std::chrono::milliseconds(2'000));
  }
}

TEST_F(SqliteStoreTest, ProgressAndMetricsUpsertIdempotently) {
  ASSERT_TRUE(store_->AddStudy(Study(testing::kSmallStudy)).ok());
  ClaimedJob job = Claim();
  ASSERT_TRUE(store_->RecordProgress(job.lease_id, 4096, 1234.5).ok());
  std::vector<MetricPoint> points = {
      {"train/loss", 1000, 5.0}, {"train/loss", 2000, 4.0}, {"eval/heldout_loss", 2000, 4.5}};
  ASSERT_EQ(*store_->AddMetrics(job.lease_id, points), 3);
  ASSERT_EQ(*store_->AddMetrics(job.lease_id, points), 3);  // re-sent: no duplicates
  // A re-sent point with a new value replaces the old one.
  ASSERT_TRUE(store_->AddMetrics(job.lease_id, {{"train/loss", 2000, 3.5}}).ok());
  ASSERT_TRUE(store_->AddMetrics(job.lease_id, {{"train/loss", 500, 9.0}}).ok());

  CellInfo cell = Cell(job.cell_id);
  EXPECT_EQ(cell.tokens_done, 4096);
  EXPECT_DOUBLE_EQ(cell.tokens_per_second, 1234.5);
  ASSERT_TRUE(cell.latest_loss.has_value());
  EXPECT_DOUBLE_EQ(*cell.latest_loss, 3.5);  // the point with the most tokens, not the last sent

  absl::StatusOr<std::vector<CellResult>> results = store_->Results("small");
  ASSERT_TRUE(results.ok());
  ASSERT_EQ(results->size(), 6u);
  const CellResult& r = results->front();
  EXPECT_EQ(r.cell.id, job.cell_id);
  EXPECT_EQ(r.final_metrics,
            (std::map<std::string, double>{{"train/loss", 3.5}, {"eval/heldout_loss", 4.5}}));
  EXPECT_TRUE((*results)[1].final_metrics.empty());
}

// A metric the last evaluation did not report is absent from the results, not its stale
// earlier value: here rh/max_full was measured at 1000 tokens but not at 2000.
TEST_F(SqliteStoreTest, ResultsShowTheLastEvaluationOnly) {
  ASSERT_TRUE(store_->AddStudy(Study(testing::kSmallStudy)).ok());
  ClaimedJob job = Claim();
  ASSERT_TRUE(store_
                  ->AddMetrics(job.lease_id, {{"eval/heldout_loss", 1000, 4.0},
                                              {"rh/max_full", 1000, 0.9},
                                              {"niah/acc", 1000, 0.2},
                                              {"eval/heldout_loss", 2000, 3.0},
                                              {"niah/acc", 2000, 0.1},
                                              {"train/loss", 2500, 2.5}})
                  .ok());
  absl::StatusOr<std::vector<CellResult>> results = store_->Results("small");
  ASSERT_TRUE(results.ok());
  EXPECT_EQ(results->front().final_metrics,
            (std::map<std::string, double>{
                {"eval/heldout_loss", 3.0}, {"niah/acc", 0.1}, {"train/loss", 2.5}}));
}

TEST_F(SqliteStoreTest, NanMetricsSurvive) {
  ASSERT_TRUE(store_->AddStudy(Study(testing::kSmallStudy)).ok());
  ClaimedJob job = Claim();
  ASSERT_TRUE(store_->AddMetrics(job.lease_id, {{"train/loss", 10, std::nan("")}}).ok());
  absl::StatusOr<std::vector<CellResult>> results = store_->Results("small");
  ASSERT_TRUE(results.ok());
  EXPECT_TRUE(std::isnan(results->front().final_metrics.at("train/loss")));
  EXPECT_FALSE(Cell(job.cell_id).latest_loss.has_value());
}

TEST_F(SqliteStoreTest, BadMetricPointsAreRejected) {
  ASSERT_TRUE(store_->AddStudy(Study(testing::kSmallStudy)).ok());
  ClaimedJob job = Claim();
  EXPECT_EQ(store_->AddMetrics(job.lease_id, {{"", 1, 1}}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->AddMetrics(job.lease_id, {{"x", -1, 1}}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// Two stores (two connections) on one file, several threads each: every cell is claimed
// exactly once.
TEST(SqliteStoreConcurrencyTest, ConcurrentClaimsNeverReturnTheSameCell) {
  TempDir dir;
  common::FakeClock clock;
  const std::string path = dir.File("nested/dir/onset.db");
  absl::StatusOr<std::unique_ptr<SqliteStore>> a = SqliteStore::Open(path, clock);
  ASSERT_TRUE(a.ok()) << a.status();
  absl::StatusOr<std::unique_ptr<SqliteStore>> b = SqliteStore::Open(path, clock);
  ASSERT_TRUE(b.ok()) << b.status();

  std::string yaml = testing::kSmallStudy;
  yaml.replace(yaml.find("seeds: 2"), 8, "seeds: 20");  // 3 x 20 = 60 cells
  absl::StatusOr<StudySpec> spec = ParseStudyFile("s.yaml", yaml);
  ASSERT_TRUE(spec.ok());
  ASSERT_TRUE((*a)->AddStudy({spec->name, "", "s.yaml", yaml, spec->cells}).ok());
  absl::StatusOr<std::string> worker = testing::WorkerId((*a)->RegisterWorker({"h", 1, "v"}));
  ASSERT_TRUE(worker.ok());

  std::mutex mu;
  std::vector<std::string> claimed;
  int errors = 0;
  std::vector<std::thread> threads;
  for (int t = 0; t < 6; ++t) {
    Store* store = t % 2 ? b->get() : a->get();
    threads.emplace_back([&, store] {
      while (true) {
        absl::StatusOr<std::optional<ClaimedJob>> job = store->ClaimNextCell(*worker, {"cpu:0"});
        std::lock_guard<std::mutex> lock(mu);
        if (!job.ok()) {
          ++errors;
          return;
        }
        if (!*job) return;
        claimed.push_back((*job)->cell_id);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(errors, 0);
  EXPECT_EQ(claimed.size(), 60u);
  EXPECT_EQ(std::set<std::string>(claimed.begin(), claimed.end()).size(), claimed.size());
}

}  // namespace
}  // namespace onset::coordinator

namespace onset::coordinator {
namespace {

// The per-cause failure policy as the store applies it (failure_policy.h).
class FailurePolicyStoreTest : public SqliteStoreTest {
 protected:
  void SetUp() override {
    SqliteStoreTest::SetUp();
    ASSERT_TRUE(store_->AddStudy(Study(testing::kSmallStudy)).ok());
  }
  static AttemptEnd Ended(AttemptOutcome outcome) {
    AttemptEnd end;
    end.outcome = outcome;
    return end;
  }
  AttemptEnd Crash(const std::string& stderr_tail = "") {
    return {AttemptOutcome::kFailed, 1, 0, "exit code 1", stderr_tail};
  }
};

TEST_F(FailurePolicyStoreTest, CrashesRetryWithGrowingBackoffThenFail) {
  ClaimedJob job = Claim();
  const std::string cell = job.cell_id;
  for (int failure = 1; failure <= 3; ++failure) {
    ASSERT_TRUE(store_->FinishAttempt(job.lease_id, Crash()).ok());
    CellInfo info = Cell(cell);
    EXPECT_EQ(info.failures, failure);
    if (failure == 3) {
      EXPECT_EQ(info.state, CellState::kFailed);  // the limit
      break;
    }
    EXPECT_EQ(info.state, CellState::kBackoff);
    const auto wait = RetryPolicy().Backoff(failure);
    EXPECT_EQ(info.retry_at_unix_ms, clock_.WallUnixMs() + wait.count());
    // Not claimable before its time: the next queued cell comes first.
    ClaimedJob other = Claim();
    EXPECT_NE(other.cell_id, cell);
    ASSERT_TRUE(store_->FinishAttempt(other.lease_id, Ended(AttemptOutcome::kSucceeded)).ok());
    clock_.Advance(wait);
    job = Claim();
    ASSERT_EQ(job.cell_id, cell);
    EXPECT_EQ(job.attempt, failure + 1);
  }
}

TEST_F(FailurePolicyStoreTest, DivergedOomAndConfigAreNotRetried) {
  ClaimedJob a = Claim(), b = Claim(), c = Claim();
  ASSERT_TRUE(
      store_->FinishAttempt(a.lease_id, {AttemptOutcome::kDiverged, 3, 0, "diverged", ""}).ok());
  ASSERT_TRUE(store_->FinishAttempt(b.lease_id, Crash("RuntimeError: CUDA out of memory.")).ok());
  ASSERT_TRUE(
      store_->FinishAttempt(c.lease_id, {AttemptOutcome::kFailed, 2, 0, "exit code 2", ""}).ok());
  EXPECT_EQ(Cell(a.cell_id).state, CellState::kDiverged);
  EXPECT_EQ(Cell(b.cell_id).state, CellState::kFailed);
  EXPECT_EQ(Cell(b.cell_id).last_error, "out of memory: exit code 1");
  EXPECT_EQ(Cell(c.cell_id).state, CellState::kFailed);
  EXPECT_EQ(Cell(c.cell_id).last_error, "config or data refused by the trainer: exit code 2");
}

TEST_F(FailurePolicyStoreTest, AHandedBackAttemptIsRequeuedAtOnceAndNotCounted) {
  ClaimedJob job = Claim();
  ASSERT_TRUE(
      store_->FinishAttempt(job.lease_id, {AttemptOutcome::kHandedBack, 4, 0, "worker stopped", ""})
          .ok());
  EXPECT_EQ(Cell(job.cell_id).state, CellState::kQueued);
  EXPECT_EQ(Cell(job.cell_id).failures, 0);
  ClaimedJob again = Claim();
  EXPECT_EQ(again.cell_id, job.cell_id);
  EXPECT_EQ(again.attempt, 2);
}

TEST_F(FailurePolicyStoreTest, RepeatedAlikeFailuresRaiseAnAlert) {
  ClaimedJob a = Claim(), b = Claim(), c = Claim();
  ASSERT_TRUE(store_->FinishAttempt(a.lease_id, Crash("std::bad_alloc")).ok());
  ASSERT_TRUE(store_->FinishAttempt(b.lease_id, Crash("std::bad_alloc")).ok());
  EXPECT_EQ(store_->GetStudy("small")->study.alert, "");  // two are not a pattern yet
  ASSERT_TRUE(store_->FinishAttempt(c.lease_id, Crash("std::bad_alloc")).ok());
  EXPECT_EQ(store_->GetStudy("small")->study.alert,
            "3 attempts in a row (3 cells) failed alike: out of memory: exit code 1");
  ClaimedJob d = Claim();
  ASSERT_TRUE(store_->FinishAttempt(d.lease_id, Ended(AttemptOutcome::kSucceeded)).ok());
  ClaimedJob e = Claim();
  ASSERT_TRUE(store_->FinishAttempt(e.lease_id, Crash()).ok());
  EXPECT_EQ(store_->GetStudy("small")->study.alert, "");  // the latest failure differs
}

TEST_F(FailurePolicyStoreTest, CancelStopsQueuedCellsAtOnceAndRunningOnesAtTheHeartbeat) {
  ClaimedJob running = Claim();
  ASSERT_EQ(*store_->CancelCells("small", {}), 6);
  // It runs until its attempt has ended: never claimed meanwhile.
  EXPECT_EQ(Cell(running.cell_id).state, CellState::kRunning);
  absl::StatusOr<LeaseStatus> hb = store_->RecordProgress(running.lease_id, 10, 1);
  ASSERT_TRUE(hb.ok());
  EXPECT_TRUE(hb->cancelled);
  ASSERT_TRUE(store_->FinishAttempt(running.lease_id, Ended(AttemptOutcome::kCancelled)).ok());
  EXPECT_EQ(Cell(running.cell_id).state, CellState::kCancelled);
  absl::StatusOr<std::optional<ClaimedJob>> none = store_->ClaimNextCell(worker_, {"cpu:0"});
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  EXPECT_EQ(*store_->CancelCells("small", {}), 0);  // nothing left to cancel
  EXPECT_EQ(store_->CancelCells("small", {"0123456789abcdef"}).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(store_->CancelCells("nope", {}).status().code(), absl::StatusCode::kNotFound);
}

// The last heartbeat may come well before the end (or, for a short WSD branch, never): a success
// shows the furthest point the trainer reported, its "done" event's token count.
TEST_F(FailurePolicyStoreTest, ASucceededCellShowsTheTokensOfItsLastPointAsProgress) {
  ClaimedJob done = Claim();
  ClaimedJob failed = Claim();
  const int64_t budget = Cell(done.cell_id).tokens_budget;
  ASSERT_TRUE(store_->RecordProgress(done.lease_id, budget * 9 / 10, 1).ok());
  ASSERT_TRUE(store_->AddMetrics(done.lease_id, {{"train/loss", budget, 2.0}}).ok());
  ASSERT_TRUE(store_->RecordProgress(failed.lease_id, budget / 2, 1).ok());
  ASSERT_TRUE(store_->AddMetrics(failed.lease_id, {{"train/loss", budget * 3 / 4, 2.0}}).ok());
  ASSERT_TRUE(store_->FinishAttempt(done.lease_id, Ended(AttemptOutcome::kSucceeded)).ok());
  ASSERT_TRUE(store_->FinishAttempt(failed.lease_id, Crash()).ok());
  EXPECT_EQ(Cell(done.cell_id).tokens_done, budget);
  EXPECT_EQ(Cell(failed.cell_id).tokens_done, budget / 2);  // as its heartbeat said
}

TEST_F(FailurePolicyStoreTest, ACellNamedManyTimesIsCancelledOnceAndOnlyItIs) {
  ClaimedJob running = Claim();
  std::vector<std::string> ids(50'000, running.cell_id);
  EXPECT_EQ(*store_->CancelCells("small", ids), 1);
  EXPECT_EQ(Cell(running.cell_id).state, CellState::kRunning);  // until its attempt ends
  EXPECT_TRUE(store_->RecordProgress(running.lease_id, 1, 1)->cancelled);
  int queued = 0;
  for (const CellInfo& cell : store_->GetStudy("small")->cells) {
    queued += cell.state == CellState::kQueued;
  }
  EXPECT_EQ(queued, 5);  // the other cells are untouched
  EXPECT_EQ(*store_->CancelCells("small", ids), 0);
}

TEST_F(FailurePolicyStoreTest, RerunQueuesTheSelectedCellsAndFreshForgetsTheirMetrics) {
  ClaimedJob a = Claim(), b = Claim();
  ASSERT_TRUE(store_->AddMetrics(a.lease_id, {{"train/loss", 100, 3.0}}).ok());
  ASSERT_TRUE(store_->FinishAttempt(a.lease_id, Crash("out of memory")).ok());
  ASSERT_TRUE(store_->FinishAttempt(b.lease_id, Ended(AttemptOutcome::kDiverged)).ok());
  const std::string arch_a = Cell(a.cell_id).axes.at("arch");

  RerunRequest only_failed{"small", {CellState::kFailed}, {}, {}, false};
  EXPECT_EQ(*store_->RerunCells(only_failed), 1);
  EXPECT_EQ(Cell(a.cell_id).state, CellState::kQueued);
  EXPECT_EQ(Cell(a.cell_id).failures, 0);
  EXPECT_EQ(Cell(b.cell_id).state, CellState::kDiverged);
  ClaimedJob again = Claim();
  EXPECT_EQ(again.cell_id, a.cell_id);
  EXPECT_FALSE(again.fresh);  // resumes from its checkpoint
  ASSERT_TRUE(store_->FinishAttempt(again.lease_id, Crash("out of memory")).ok());

  RerunRequest fresh{
      "small", {CellState::kFailed, CellState::kDiverged}, {{"arch", arch_a}}, {}, true};
  EXPECT_EQ(*store_->RerunCells(fresh), Cell(b.cell_id).axes.at("arch") == arch_a ? 2 : 1);
  ClaimedJob from_scratch = Claim();
  EXPECT_EQ(from_scratch.cell_id, a.cell_id);
  EXPECT_TRUE(from_scratch.fresh);
  absl::StatusOr<std::vector<CellResult>> results = store_->Results("small");
  for (const CellResult& r : *results) {
    if (r.cell.id == a.cell_id) {
      EXPECT_TRUE(r.final_metrics.empty());  // forgotten
    }
  }
}

}  // namespace
}  // namespace onset::coordinator

namespace onset::coordinator {
namespace {

TEST_F(SqliteStoreTest, ListWorkersShowsTheirRunningJobsMostRecentFirst) {
  ASSERT_TRUE(store_->AddStudy(Study(testing::kSmallStudy)).ok());
  clock_.Advance(std::chrono::seconds(5));
  absl::StatusOr<std::string> idle =
      testing::WorkerId(store_->RegisterWorker({"host-b", 1, "0.2"}));
  ASSERT_TRUE(idle.ok());
  clock_.Advance(std::chrono::seconds(5));
  ClaimedJob job = Claim();  // worker_ is seen now
  absl::StatusOr<std::vector<WorkerInfo>> workers = store_->ListWorkers();
  ASSERT_TRUE(workers.ok()) << workers.status();
  ASSERT_EQ(workers->size(), 2u);
  EXPECT_EQ((*workers)[0].id, worker_);
  EXPECT_EQ((*workers)[0].host, "host-a");
  EXPECT_EQ((*workers)[0].last_seen_unix_ms, clock_.WallUnixMs());
  ASSERT_EQ((*workers)[0].running.size(), 1u);
  EXPECT_EQ((*workers)[0].running[0].cell_id, job.cell_id);
  EXPECT_EQ((*workers)[0].running[0].study, "small");
  EXPECT_EQ((*workers)[0].running[0].lease_id, "");  // never listed
  EXPECT_EQ((*workers)[1].id, *idle);
  EXPECT_TRUE((*workers)[1].running.empty());
}

// The workers table is bounded: a registration that finds it full forgets the workers seen least
// recently that never ran an attempt and have been silent for the retention; a worker that ran
// attempts, or was seen recently, is never forgotten, and when nothing may be forgotten the
// registration is refused (the worker retries) instead of growing the table.
TEST(SqliteStoreWorkersTest, AFullTableForgetsOnlyStaleWorkersThatRanNothing) {
  TempDir dir;
  common::FakeClock clock;
  SqliteStore::Options options;
  options.max_workers = 3;
  options.forget_workers_after = std::chrono::hours(1);
  absl::StatusOr<std::unique_ptr<SqliteStore>> opened =
      SqliteStore::Open(dir.File("onset.db"), clock, RetryPolicy(), options);
  ASSERT_TRUE(opened.ok()) << opened.status();
  SqliteStore& store = **opened;
  // One cell: once it has run, a lease finds nothing and only marks its worker seen.
  ASSERT_TRUE(
      store
          .AddStudy(Study("name: one\nmodel: {layers: 1, d_model: 16, heads: 2, seq_len: "
                          "16}\ntrain: {tokens: 4K, batch_tokens: 512}\neval: {niah_samples: 0}\n"))
          .ok());
  const std::string ran = store.RegisterWorker({"ran", 1, "v"})->id;
  const std::string stale = store.RegisterWorker({"stale", 1, "v"})->id;
  const std::string polling = store.RegisterWorker({"polling", 1, "v"})->id;
  absl::StatusOr<std::optional<ClaimedJob>> job = store.ClaimNextCell(ran, {"cpu:0"});
  ASSERT_TRUE(job.ok() && job->has_value()) << job.status();
  ASSERT_TRUE(
      store.FinishAttempt((*job)->lease_id, AttemptEnd{AttemptOutcome::kSucceeded, 0, 0, "", ""})
          .ok());
  clock.Advance(std::chrono::hours(2));  // `ran` and `stale` fall silent
  absl::StatusOr<std::optional<ClaimedJob>> poll = store.ClaimNextCell(polling, {"cpu:0"});
  ASSERT_TRUE(poll.ok()) << poll.status();
  EXPECT_FALSE(poll->has_value());  // nothing to run, but `polling` is seen now

  absl::StatusOr<std::string> fourth = testing::WorkerId(store.RegisterWorker({"fourth", 1, "v"}));
  ASSERT_TRUE(fourth.ok()) << fourth.status();
  absl::StatusOr<std::vector<WorkerInfo>> workers = store.ListWorkers();
  ASSERT_TRUE(workers.ok()) << workers.status();
  std::set<std::string> hosts;
  for (const WorkerInfo& w : *workers) hosts.insert(w.host);
  EXPECT_EQ(hosts, (std::set<std::string>{"ran", "polling", "fourth"}));
  // The forgotten worker is told so when it next asks, and would register again.
  absl::StatusOr<std::optional<ClaimedJob>> forgotten = store.ClaimNextCell(stale, {"cpu:0"});
  EXPECT_EQ(forgotten.status().code(), absl::StatusCode::kFailedPrecondition) << forgotten.status();

  absl::StatusOr<std::string> fifth = testing::WorkerId(store.RegisterWorker({"fifth", 1, "v"}));
  EXPECT_EQ(fifth.status().code(), absl::StatusCode::kResourceExhausted) << fifth.status();
  EXPECT_THAT(fifth.status().message(), HasSubstr("at most 3 workers"));
  EXPECT_EQ(store.ListWorkers()->size(), 3u);
  // Once the newest has been silent for the retention, there is room again.
  clock.Advance(std::chrono::hours(2));
  EXPECT_TRUE(store.RegisterWorker({"fifth", 1, "v"}).ok());
  EXPECT_EQ(store.ListWorkers()->size(), 2u);  // `ran`, and the new one
}

TEST_F(SqliteStoreTest, AWorkerThatExitsSaysWhenOnce) {
  absl::StatusOr<std::vector<WorkerInfo>> before = store_->ListWorkers();
  ASSERT_TRUE(before.ok()) << before.status();
  ASSERT_EQ(before->size(), 1u);
  EXPECT_EQ(before->front().exited_unix_ms, 0);
  clock_.Advance(std::chrono::seconds(5));
  const int64_t exit_time = clock_.WallUnixMs();
  ASSERT_TRUE(store_->DeregisterWorker(worker_).ok());
  clock_.Advance(std::chrono::seconds(5));
  ASSERT_TRUE(store_->DeregisterWorker(worker_).ok());  // idempotent: the first time stays
  const std::vector<WorkerInfo> after = *store_->ListWorkers();
  ASSERT_EQ(after.size(), 1u);
  EXPECT_EQ(after.front().exited_unix_ms, exit_time);
  EXPECT_EQ(store_->DeregisterWorker("w-nobody").code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace onset::coordinator
