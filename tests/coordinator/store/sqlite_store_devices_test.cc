// SqliteStore and devices: what workers offer, what cells need, and what each attempt was given.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>

#include "common/fake_clock.h"
#include "coordinator/store/sqlite_store.h"
#include "coordinator/study/study_file.h"
#include "tests/coordinator/test_util.h"

namespace onset::coordinator {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// One cell per study; `devices` lines go under `resources`.
std::string OneCellStudy(const std::string& name, int devices) {
  return "name: " + name +
         "\n"
         "model: {layers: 2, d_model: 32, heads: 2, seq_len: 64}\n"
         "train: {tokens: 64K, batch_tokens: 512}\n"
         "resources: {devices: " +
         std::to_string(devices) +
         "}\n"
         "grid: {arch: [full], seeds: 2}\n";
}

NewStudy Study(const std::string& yaml) {
  absl::StatusOr<StudySpec> spec = ParseStudyFile("s.yaml", yaml);
  EXPECT_TRUE(spec.ok()) << spec.status();
  return NewStudy{spec->name,        spec->description,      spec->source_name,
                  spec->source_yaml, std::move(spec->cells), spec->devices};
}

class SqliteStoreDevicesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<SqliteStore>> store =
        SqliteStore::Open(dir_.File("onset.db"), clock_);
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = std::move(*store);
    // Queue order: the big study's cells first, then the pair's, then the single's.
    for (const auto& [name, devices] : {std::pair{"big", 4}, {"pair", 2}, {"single", 1}}) {
      absl::StatusOr<AddStudyResult> added = store_->AddStudy(Study(OneCellStudy(name, devices)));
      ASSERT_TRUE(added.ok()) << added.status();
      ASSERT_EQ(added->cells_added, 2);
      EXPECT_EQ(added->cells[0].devices, devices);
    }
    absl::StatusOr<std::string> worker =
        testing::WorkerId(store_->RegisterWorker({"gpu-1", 2, "v", {"cuda:0", "cuda:1"}}));
    ASSERT_TRUE(worker.ok()) << worker.status();
    worker_ = *worker;
  }

  std::optional<ClaimedJob> Claim(const std::string& worker, const std::vector<std::string>& free) {
    absl::StatusOr<std::optional<ClaimedJob>> job = store_->ClaimNextCell(worker, free);
    EXPECT_TRUE(job.ok()) << job.status();
    return job.ok() ? *job : std::nullopt;
  }

  std::vector<CellInfo> Cells(const std::string& study) {
    absl::StatusOr<StudyDetail> detail = store_->GetStudy(study);
    EXPECT_TRUE(detail.ok()) << detail.status();
    return detail.ok() ? detail->cells : std::vector<CellInfo>();
  }

  std::string Waiting(const std::string& study) {
    absl::StatusOr<StudyDetail> detail = store_->GetStudy(study);
    EXPECT_TRUE(detail.ok()) << detail.status();
    return detail.ok() ? detail->study.waiting : "";
  }

  testutil::TempDir dir_;
  common::FakeClock clock_;
  std::unique_ptr<SqliteStore> store_;
  std::string worker_;
};

TEST_F(SqliteStoreDevicesTest, ACellIsGivenTheFirstFreeDevicesItNeeds) {
  std::optional<ClaimedJob> pair = Claim(worker_, {"cuda:1", "cuda:0"});
  ASSERT_TRUE(pair.has_value());
  EXPECT_EQ(pair->study, "pair");  // the big cells ahead need 4
  EXPECT_THAT(pair->devices, ElementsAre("cuda:1", "cuda:0"));
}

TEST_F(SqliteStoreDevicesTest, ACellNeedingMoreThanIsFreeDoesNotHoldUpSmallerOnes) {
  std::optional<ClaimedJob> first = Claim(worker_, {"cuda:0"});
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->study, "single");
  EXPECT_THAT(first->devices, ElementsAre("cuda:0"));
  std::optional<ClaimedJob> second = Claim(worker_, {"cuda:1"});
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(second->study, "single");
  EXPECT_NE(second->cell_id, first->cell_id);
  // Only cells needing 2 or 4 devices are left: nothing fits in one.
  EXPECT_FALSE(Claim(worker_, {"cuda:1"}).has_value());
  for (const char* study : {"big", "pair"}) {
    for (const CellInfo& cell : Cells(study)) {
      EXPECT_EQ(cell.state, CellState::kQueued) << study;
    }
  }
}

TEST_F(SqliteStoreDevicesTest, AttemptsRecordTheirDevices) {
  std::optional<ClaimedJob> pair = Claim(worker_, {"cuda:0", "cuda:1"});
  ASSERT_TRUE(pair.has_value());
  absl::StatusOr<std::vector<WorkerInfo>> workers = store_->ListWorkers();
  ASSERT_TRUE(workers.ok()) << workers.status();
  ASSERT_EQ(workers->size(), 1u);
  EXPECT_THAT((*workers)[0].devices, ElementsAre("cuda:0", "cuda:1"));
  EXPECT_EQ((*workers)[0].slots, 2);
  ASSERT_EQ((*workers)[0].running.size(), 1u);
  EXPECT_EQ((*workers)[0].running[0].cell_id, pair->cell_id);
  EXPECT_THAT((*workers)[0].running[0].devices, ElementsAre("cuda:0", "cuda:1"));

  absl::StatusOr<std::vector<RunningAttempt>> running = store_->RunningAttempts();
  ASSERT_TRUE(running.ok()) << running.status();
  ASSERT_EQ(running->size(), 1u);
  EXPECT_THAT((*running)[0].devices, ElementsAre("cuda:0", "cuda:1"));
}

TEST_F(SqliteStoreDevicesTest, OnlyAWorkerBigEnoughClaimsABigCell) {
  EXPECT_EQ(Waiting("big"), "2 queued cells need 4 devices; the largest registered worker has 2");
  EXPECT_EQ(Waiting("pair"), "");

  absl::StatusOr<std::string> large = testing::WorkerId(
      store_->RegisterWorker({"gpu-2", 4, "v", {"cuda:0", "cuda:1", "cuda:2", "cuda:3"}}));
  ASSERT_TRUE(large.ok()) << large.status();
  EXPECT_EQ(Waiting("big"), "");
  std::optional<ClaimedJob> big = Claim(*large, {"cuda:3", "cuda:2", "cuda:1", "cuda:0"});
  ASSERT_TRUE(big.has_value());
  EXPECT_EQ(big->study, "big");
  EXPECT_EQ(big->worker_id, *large);
  EXPECT_THAT(big->devices, ElementsAre("cuda:3", "cuda:2", "cuda:1", "cuda:0"));
  EXPECT_EQ(testing::FindCell(*store_, "big", big->cell_id).state, CellState::kRunning);
}

TEST_F(SqliteStoreDevicesTest, AWorkerWithoutDeviceNamesCountsItsSlots) {
  ASSERT_TRUE(store_->RegisterWorker({"cpu-1", 3, "v"}).ok());
  EXPECT_EQ(Waiting("big"), "2 queued cells need 4 devices; the largest registered worker has 3");
}

TEST_F(SqliteStoreDevicesTest, NoWorkerNoNote) {
  testutil::TempDir dir;
  absl::StatusOr<std::unique_ptr<SqliteStore>> store = SqliteStore::Open(dir.File("x.db"), clock_);
  ASSERT_TRUE(store.ok()) << store.status();
  ASSERT_TRUE((*store)->AddStudy(Study(OneCellStudy("big", 4))).ok());
  absl::StatusOr<StudyDetail> big = (*store)->GetStudy("big");
  ASSERT_TRUE(big.ok()) << big.status();
  EXPECT_EQ(big->study.waiting, "");
}

TEST_F(SqliteStoreDevicesTest, BadDeviceListsAreRefusedAndClaimNothing) {
  auto code = [&](const std::vector<std::string>& free) {
    return store_->ClaimNextCell(worker_, free).status();
  };
  EXPECT_EQ(code({}).code(), absl::StatusCode::kInvalidArgument);
  absl::Status twice = code({"cuda:0", "cuda:0"});
  EXPECT_EQ(twice.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(twice.message()), HasSubstr("cuda:0 is listed twice"));
  absl::Status foreign = code({"cuda:0", "cuda:7"});
  EXPECT_EQ(foreign.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(foreign.message()),
              HasSubstr("cuda:7 is not a device of worker " + worker_ + " (cuda:0,cuda:1)"));
  EXPECT_EQ(code({"cuda:0,cuda:1"}).code(), absl::StatusCode::kInvalidArgument);
  for (const char* study : {"big", "pair", "single"}) {
    for (const CellInfo& cell : Cells(study)) {
      EXPECT_EQ(cell.state, CellState::kQueued) << study;
      EXPECT_EQ(cell.attempts, 0) << study;
    }
  }

  absl::StatusOr<std::string> bad =
      testing::WorkerId(store_->RegisterWorker({"h", 2, "v", {"cuda:0", ""}}));
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("devices: '' is not a device name"));
}

// What a worker with no job to run now could run later: the queued cells that fit the devices
// it registered, whatever is free now; none for a worker too small for them.
TEST_F(SqliteStoreDevicesTest, WaitingCellsAreTheQueuedOnesThatFitTheWorker) {
  auto waiting = [&](const std::string& worker) {
    absl::StatusOr<int> n = store_->CountWaitingCells(worker);
    EXPECT_TRUE(n.ok()) << n.status();
    return n.value_or(-1);
  };
  EXPECT_EQ(waiting(worker_), 4);  // the pair's and the single's, not the big ones
  absl::StatusOr<std::string> small =
      testing::WorkerId(store_->RegisterWorker({"cpu-1", 1, "v", {"cpu:0"}}));
  ASSERT_TRUE(small.ok()) << small.status();
  EXPECT_EQ(waiting(*small), 2);
  EXPECT_EQ(waiting("w-unknown"), 0);

  // Running cells are not waiting; a cell needing both devices waits while one is busy.
  ASSERT_TRUE(Claim(*small, {"cpu:0"}).has_value());
  ASSERT_TRUE(Claim(*small, {"cpu:0"}).has_value());
  EXPECT_EQ(waiting(*small), 0);
  EXPECT_FALSE(Claim(worker_, {"cuda:1"}).has_value());
  EXPECT_EQ(waiting(worker_), 2);
}

TEST_F(SqliteStoreDevicesTest, WaitingCellsAreCountedUpToTheBound) {
  testutil::TempDir dir;
  absl::StatusOr<std::unique_ptr<SqliteStore>> store = SqliteStore::Open(dir.File("x.db"), clock_);
  ASSERT_TRUE(store.ok()) << store.status();
  absl::StatusOr<AddStudyResult> added =
      (*store)->AddStudy(Study("name: many\n"
                               "model: {layers: 2, d_model: 32, heads: 2, seq_len: 64}\n"
                               "train: {tokens: 64K, batch_tokens: 512}\n"
                               "grid: {arch: [full], seeds: " +
                               std::to_string(kMaxCountedWaitingCells + 5) + "}\n"));
  ASSERT_TRUE(added.ok()) << added.status();
  ASSERT_EQ(added->cells_added, kMaxCountedWaitingCells + 5);
  absl::StatusOr<std::string> worker = testing::WorkerId((*store)->RegisterWorker({"h", 1, "v"}));
  ASSERT_TRUE(worker.ok()) << worker.status();
  absl::StatusOr<int> n = (*store)->CountWaitingCells(*worker);
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(*n, kMaxCountedWaitingCells);
}

TEST_F(SqliteStoreDevicesTest, AWorkersSlurmJobIsStoredAndListed) {
  WorkerRegistration in_slurm{"node-3", 2, "v", {"cuda:0", "cuda:1"}};
  in_slurm.slurm_job = "1234_5";
  absl::StatusOr<std::string> id = testing::WorkerId(store_->RegisterWorker(in_slurm));
  ASSERT_TRUE(id.ok()) << id.status();
  absl::StatusOr<std::vector<WorkerInfo>> workers = store_->ListWorkers();
  ASSERT_TRUE(workers.ok()) << workers.status();
  std::map<std::string, std::string> jobs;
  for (const WorkerInfo& w : *workers) jobs[w.id] = w.slurm_job;
  EXPECT_EQ(jobs, (std::map<std::string, std::string>{{worker_, ""}, {*id, "1234_5"}}));
}

TEST_F(SqliteStoreDevicesTest, ABadSlurmJobIsRefusedAndSaysWhy) {
  auto refused = [&](const std::string& slurm_job) {
    WorkerRegistration worker{"h", 1, "v"};
    worker.slurm_job = slurm_job;
    absl::StatusOr<std::string> id = testing::WorkerId(store_->RegisterWorker(worker));
    EXPECT_EQ(id.status().code(), absl::StatusCode::kInvalidArgument) << slurm_job;
    return std::string(id.status().message());
  };
  EXPECT_EQ(refused(std::string(65, '1')), "slurm_job: 65 bytes; at most 64");
  EXPECT_THAT(refused("12 34"), HasSubstr("slurm_job: byte 3 (0x20) is not printable ASCII"));
  EXPECT_THAT(refused("12\n"), HasSubstr("slurm_job: byte 3 (0x0a) is not printable ASCII"));
  EXPECT_THAT(refused("\xc3\xa9"), HasSubstr("byte 1 (0xc3)"));
  absl::StatusOr<std::vector<WorkerInfo>> workers = store_->ListWorkers();
  ASSERT_TRUE(workers.ok()) << workers.status();
  EXPECT_EQ(workers->size(), 1u);
  EXPECT_TRUE(CheckSlurmJob(std::string(64, '9'), "f").ok());
  EXPECT_TRUE(CheckSlurmJob("", "f").ok());
}

}  // namespace
}  // namespace onset::coordinator
