#include "coordinator/planning/study_submission.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/fake_clock.h"
#include "coordinator/store/sqlite_store.h"
#include "model/config/wsd_trunk.h"
#include "tests/testing/temp_dir.h"

namespace onset::coordinator {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// A WSD study of 1024 tokens a step whose budgets share one trunk (trunk_plan_test.cc).
StudySpec Study(const std::string& tokens) {
  absl::StatusOr<StudySpec> spec = ParseStudyFile(
      "t.yaml",
      "name: t\n"
      "model: {layers: 1, d_model: 32, heads: 2, seq_len: 64}\n"
      "train: {batch_tokens: 1024, schedule: wsd, decay_fraction: 0.2, warmup_tokens: 8K}\n"
      "eval: {niah_samples: 0}\n"
      "grid:\n"
      "  arch: [full]\n"
      "  tokens: " +
          tokens + "\n");
  EXPECT_TRUE(spec.ok()) << spec.status();
  return spec.ok() ? *spec : StudySpec{};
}

std::vector<int64_t> StoredBranchPoints(SqliteStore& store) {
  absl::StatusOr<std::vector<StoredPlanCell>> stored = store.PlanCells("t");
  EXPECT_TRUE(stored.ok()) << stored.status();
  for (const StoredPlanCell& c : *stored) {
    if (c.role != CellRole::kTrunk) continue;
    model::TrunkSpec spec;
    EXPECT_FALSE(model::ParseTrunkSpec(nlohmann::json::parse(c.config_json), &spec));
    return spec.branch_points;
  }
  return {};
}

// Two submissions of one WSD study, each adding a budget, planned against the same stored
// study: the second to be written would store a trunk spec without the first's branch point
// (and a branch waiting for ever for it). It is refused instead, and planned again it stores a
// trunk with both points.
TEST(StudySubmissionTest, ASubmissionPlannedBeforeAnotherWasStoredIsPlannedAgain) {
  testutil::TempDir dir;
  common::FakeClock clock;
  absl::StatusOr<std::unique_ptr<SqliteStore>> store =
      SqliteStore::Open(dir.File("onset.db"), clock);
  ASSERT_TRUE(store.ok()) << store.status();
  PlannedSubmission first;
  ASSERT_TRUE(SubmitPlanned(
                  **store, [] { return Study("[40K, 80K]"); }, true, false, &first)
                  .ok());
  EXPECT_THAT(StoredBranchPoints(**store), ElementsAre(31744, 63488));

  absl::StatusOr<PlannedSubmission> a = PlanSubmission(**store, Study("[40K, 80K, 160K]"), true);
  absl::StatusOr<PlannedSubmission> b = PlanSubmission(**store, Study("[40K, 80K, 320K]"), true);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_TRUE((*store)->AddStudy(a->study).ok());
  absl::StatusOr<AddStudyResult> stale = (*store)->AddStudy(b->study);
  EXPECT_EQ(stale.status().code(), absl::StatusCode::kAborted) << stale.status();
  EXPECT_THAT(std::string(stale.status().message()), HasSubstr("plan it again"));
  EXPECT_THAT(StoredBranchPoints(**store), ElementsAre(31744, 63488, 128000));  // unchanged

  PlannedSubmission again;
  ASSERT_TRUE(SubmitPlanned(
                  **store, [] { return Study("[40K, 80K, 320K]"); }, true, false, &again)
                  .ok());
  EXPECT_THAT(StoredBranchPoints(**store), ElementsAre(31744, 63488, 128000, 256000));
}

}  // namespace
}  // namespace onset::coordinator
