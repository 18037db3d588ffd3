// SqliteStore::ClaimNextCell runs the claim rule (coordinator/cells/claim_rule.h) as an indexed
// query. On random queues (states, retry times, readiness, devices needed and free) the store
// must hand out exactly the cell the rule names, or none when the rule names none.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "common/fake_clock.h"
#include "coordinator/cells/claim_rule.h"
#include "coordinator/store/sqlite_store.h"
#include "coordinator/study/study_file.h"
#include "db/sqlite.h"
#include "proto/cell_names.h"
#include "tests/coordinator/test_util.h"

namespace onset::coordinator {
namespace {

NewStudy Study(const std::string& name, int devices, int seeds) {
  const std::string yaml = "name: " + name +
                           "\nmodel: {layers: 2, d_model: 32, heads: 2, seq_len: 64}\n"
                           "train: {tokens: 64K, batch_tokens: 512}\n"
                           "resources: {devices: " +
                           std::to_string(devices) +
                           "}\ngrid: {arch: [full], seeds: " + std::to_string(seeds) + "}\n";
  absl::StatusOr<StudySpec> spec = ParseStudyFile("s.yaml", yaml);
  EXPECT_TRUE(spec.ok()) << spec.status();
  return NewStudy{spec->name,        spec->description,      spec->source_name,
                  spec->source_yaml, std::move(spec->cells), spec->devices};
}

TEST(ClaimRuleAgreementTest, TheStoreHandsOutTheCellTheRuleNames) {
  testutil::TempDir dir;
  common::FakeClock clock;
  absl::StatusOr<std::unique_ptr<SqliteStore>> store =
      SqliteStore::Open(dir.File("onset.db"), clock);
  ASSERT_TRUE(store.ok()) << store.status();
  // Cells needing 2, 1, 4 and 1 devices, interleaved in queue order by study.
  for (const auto& [name, devices, seeds] :
       {std::tuple{"pair", 2, 3}, {"single", 1, 3}, {"big", 4, 2}, {"tail", 1, 2}}) {
    ASSERT_TRUE((*store)->AddStudy(Study(name, devices, seeds)).ok()) << name;
  }
  const std::vector<std::string> devices = {"cuda:0", "cuda:1", "cuda:2", "cuda:3"};
  absl::StatusOr<std::string> worker =
      testing::WorkerId((*store)->RegisterWorker({"gpu-1", 4, "v", devices}));
  ASSERT_TRUE(worker.ok()) << worker.status();
  absl::StatusOr<std::unique_ptr<db::Connection>> raw = db::Connection::Open(dir.File("onset.db"));
  ASSERT_TRUE(raw.ok()) << raw.status();

  const int64_t now = clock.WallUnixMs();
  const char* const kStates[] = {"queued",  "queued", "backoff",   "backoff",
                                 "running", "failed", "succeeded", "cancelled"};
  std::mt19937 random(20261205);
  int claimed = 0, none = 0;
  for (int trial = 0; trial < 300; ++trial) {
    // A random queue: most cells waiting, some not; backoffs due or not; some not ready.
    ASSERT_TRUE((*raw)->Exec("BEGIN").ok());
    // The states are set by hand: the attempts the earlier trials opened end, so that every
    // cell the rule may name is one the lifecycle lets be claimed (no open attempt).
    ASSERT_TRUE((*raw)
                    ->Exec("UPDATE attempts SET ended_at = 0, outcome = 'handed_back' "
                           "WHERE ended_at IS NULL")
                    .ok());
    absl::StatusOr<db::Statement> ids = (*raw)->Prepare("SELECT id FROM cells ORDER BY id");
    ASSERT_TRUE(ids.ok());
    std::vector<int64_t> rows;
    while (*ids->Step()) rows.push_back(ids->Int(0));
    for (int64_t row : rows) {
      const std::string state = kStates[random() % 8];
      const int64_t retry_at = now + static_cast<int64_t>(random() % 3) - 1;  // past, now, later
      const int ready = random() % 4 == 0 ? 0 : 1;
      ASSERT_TRUE((*raw)
                      ->Exec("UPDATE cells SET state = '" + state + "', retry_at = " +
                             std::to_string(retry_at) + ", ready = " + std::to_string(ready) +
                             " WHERE id = " + std::to_string(row))
                      .ok());
    }
    ASSERT_TRUE((*raw)->Exec("COMMIT").ok());

    // What the rule says, from the same rows.
    absl::StatusOr<db::Statement> read =
        (*raw)->Prepare("SELECT hash, state, retry_at, devices, ready FROM cells ORDER BY id");
    ASSERT_TRUE(read.ok());
    std::vector<WaitingCell> queue;
    std::vector<std::string> hashes;
    while (*read->Step()) {
      hashes.push_back(read->Text(0));
      queue.push_back({*wire::StateFromName(read->Text(1)), read->Int(2),
                       static_cast<int>(read->Int(3)), read->Int(4) != 0});
    }
    const int free_devices = 1 + static_cast<int>(random() % 4);
    const std::optional<size_t> expected = NextClaim(queue, now, free_devices);

    absl::StatusOr<std::optional<ClaimedJob>> job = (*store)->ClaimNextCell(
        *worker, std::vector<std::string>(devices.begin(), devices.begin() + free_devices));
    ASSERT_TRUE(job.ok()) << job.status();
    if (!expected) {
      EXPECT_FALSE(job->has_value()) << "trial " << trial << ": the store claimed "
                                     << (*job)->cell_id << ", the rule names none";
      ++none;
      continue;
    }
    ASSERT_TRUE(job->has_value()) << "trial " << trial << ": the rule names " << hashes[*expected]
                                  << ", the store claimed none";
    EXPECT_EQ((*job)->cell_id, hashes[*expected]) << "trial " << trial;
    ++claimed;
  }
  // Both answers were exercised many times.
  EXPECT_GT(claimed, 50);
  EXPECT_GT(none, 5);
}

}  // namespace
}  // namespace onset::coordinator
