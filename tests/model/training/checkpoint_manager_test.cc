#include "model/training/checkpoint_manager.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include <ATen/Parallel.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/adamw.h>

#include "model/distributed/c10d_collective.h"
#include "tests/model/distributed/thread_ranks.h"
#include "tests/testing/temp_dir.h"

namespace onset::model {
namespace {

using testutil::TempDir;

constexpr int64_t kTokensPerStep = 512;

// A 4096-token budget; the checkpoint fields come from `train_extra`.
CellConfig Cell(const nlohmann::json& train_extra) {
  nlohmann::json train = {{"tokens", 4096}, {"batch_tokens", kTokensPerStep}};
  train.update(train_extra);
  CellConfig c;
  auto e =
      ParseCellConfig({{"model", {{"layers", 1}, {"d_model", 16}, {"heads", 2}, {"seq_len", 32}}},
                       {"train", train}},
                      &c);
  EXPECT_FALSE(e) << e->ToString();
  return c;
}

// The token counts after which checkpoints fall due over a whole run.
std::vector<int64_t> DueOverTheRun(CheckpointManager& checkpoints, int64_t budget) {
  std::vector<int64_t> due;
  for (int64_t tokens = kTokensPerStep; tokens <= budget; tokens += kTokensPerStep) {
    if (!checkpoints.Due(tokens, /*last=*/tokens >= budget)) continue;
    due.push_back(tokens);
    checkpoints.ScheduleAfter(tokens);
  }
  return due;
}

TEST(CheckpointManagerTest, DueOnTheCadenceAtThePinsAndAtTheEnd) {
  // Every 1024, pins at 600 and 1500 (rounded up to the steps at 1024 and 1536).
  CheckpointManager checkpoints(
      "", Cell({{"checkpoint_every_tokens", 1024}, {"keep_checkpoints_at", {600, 1500}}}),
      kTokensPerStep, at::kCPU);
  EXPECT_EQ(DueOverTheRun(checkpoints, 4096), (std::vector<int64_t>{1024, 1536, 2048, 3072, 4096}));

  // A cadence off the step boundaries fires on the first step past each multiple; the end
  // always gets one.
  CheckpointManager uneven("", Cell({{"checkpoint_every_tokens", 1000}}), kTokensPerStep, at::kCPU);
  EXPECT_EQ(DueOverTheRun(uneven, 3584), (std::vector<int64_t>{1024, 2048, 3072, 3584}));

  // A resumed run counts from where it is.
  CheckpointManager resumed("", Cell({{"checkpoint_every_tokens", 1024}}), kTokensPerStep,
                            at::kCPU);
  resumed.ScheduleAfter(1536);
  EXPECT_TRUE(resumed.Due(2048, false));
  resumed.ScheduleAfter(2048);
  EXPECT_FALSE(resumed.Due(2560, false));
  EXPECT_TRUE(resumed.Due(2560, /*last=*/true));
}

// A stand-in model whose weights say which checkpoint they came from.
struct Model {
  Model() : optimizer(linear->parameters(), torch::optim::AdamWOptions(1e-3)) {}
  void Fill(float value) {
    at::NoGradGuard no_grad;
    linear->weight.fill_(value);
  }
  float Value() const { return linear->weight[0][0].item<float>(); }
  torch::nn::Linear linear{2, 2};
  torch::optim::AdamW optimizer;
};

TrainProgress At(int64_t tokens) {
  TrainProgress p;
  p.tokens = tokens;
  p.steps = tokens / kTokensPerStep;
  p.data_position = 16 * p.steps;
  p.reported = "{\"event\":\"train\"}\n";
  return p;
}

// Runs the cadence over 4096 tokens, saving each due checkpoint with weights = its tokens.
void SaveOverTheRun(CheckpointManager& checkpoints, Model& model) {
  for (int64_t tokens = kTokensPerStep; tokens <= 4096; tokens += kTokensPerStep) {
    if (!checkpoints.Due(tokens, tokens >= 4096)) continue;
    model.Fill(static_cast<float>(tokens));
    std::optional<CheckpointManager::Saved> saved =
        checkpoints.Save(At(tokens), *model.linear, model.optimizer);
    EXPECT_TRUE(saved.has_value()) << tokens;
    if (!saved) return;
    EXPECT_EQ(saved->path, checkpoints.dir() + "/" + CheckpointFileName(tokens));
    struct stat st;
    EXPECT_EQ(::stat(saved->path.c_str(), &st), 0) << saved->path;
    EXPECT_EQ(saved->bytes, st.st_size);
    EXPECT_GE(saved->seconds, 0);
    checkpoints.ScheduleAfter(tokens);
  }
}

std::vector<int64_t> Tokens(const std::string& dir) {
  std::vector<int64_t> tokens;
  for (const CheckpointFile& f : ListCheckpoints(dir)) tokens.push_back(f.tokens);
  return tokens;
}

TEST(CheckpointManagerTest, SavesAndPrunesToTheNewestAndThePinned) {
  TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  const CellConfig cell = Cell({{"checkpoint_every_tokens", 1024},
                                {"keep_checkpoints", 2},
                                {"keep_checkpoints_at", {1500}}});
  CheckpointManager checkpoints(dir.File("ckpt"), cell, kTokensPerStep, at::kCPU);
  Model model;
  SaveOverTheRun(checkpoints, model);
  EXPECT_EQ(Tokens(dir.File("ckpt")), (std::vector<int64_t>{1536, 3072, 4096}));

  // Without a directory nothing is written.
  CheckpointManager none("", cell, kTokensPerStep, at::kCPU);
  EXPECT_EQ(none.Save(At(512), *model.linear, model.optimizer), std::nullopt);
}

TEST(CheckpointManagerTest, ResumesFromTheNewestIntactCheckpoint) {
  TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  const CellConfig cell = Cell({{"checkpoint_every_tokens", 1024}, {"keep_checkpoints", 3}});
  CheckpointManager checkpoints(dir.path(), cell, kTokensPerStep, at::kCPU);
  DataParallel one(nullptr, at::kCPU);
  Model model;

  // Nothing there yet: a fresh start, and the model as it was.
  model.Fill(-1);
  CheckpointManager::Resumed fresh = checkpoints.Resume(one, model.linear.get(), &model.optimizer);
  EXPECT_EQ(fresh.progress, std::nullopt);
  EXPECT_EQ(fresh.error, std::nullopt);
  EXPECT_EQ(model.Value(), -1);

  SaveOverTheRun(checkpoints, model);
  ASSERT_EQ(Tokens(dir.path()), (std::vector<int64_t>{2048, 3072, 4096}));
  ASSERT_EQ(::truncate(dir.File(CheckpointFileName(4096)).c_str(), 100), 0);  // damaged
  Model restored;
  ::testing::internal::CaptureStderr();
  CheckpointManager::Resumed r =
      checkpoints.Resume(one, restored.linear.get(), &restored.optimizer);
  const std::string err = ::testing::internal::GetCapturedStderr();
  ASSERT_EQ(r.error, std::nullopt);
  ASSERT_TRUE(r.progress.has_value());
  EXPECT_EQ(r.progress->tokens, 3072);
  EXPECT_EQ(r.progress->steps, 6);
  EXPECT_EQ(r.progress->data_position, 96);
  EXPECT_EQ(r.progress->reported, At(3072).reported);
  EXPECT_EQ(restored.Value(), 3072);
  EXPECT_NE(err.find(CheckpointFileName(4096) + ": corrupt"), std::string::npos) << err;
  EXPECT_NE(err.find("resuming from " + dir.File(CheckpointFileName(3072))), std::string::npos)
      << err;

  // A checkpoint of another trajectory is refused, and nothing is restored.
  CheckpointManager other(dir.path(), Cell({{"lr", 0.001}}), kTokensPerStep, at::kCPU);
  Model untouched;
  untouched.Fill(-1);
  CheckpointManager::Resumed refused =
      other.Resume(one, untouched.linear.get(), &untouched.optimizer);
  EXPECT_EQ(refused.progress, std::nullopt);
  ASSERT_TRUE(refused.error.has_value());
  EXPECT_NE(refused.error->find("written for a different config"), std::string::npos)
      << *refused.error;
  EXPECT_EQ(untouched.Value(), -1);
}

// Two thread ranks (tests/model/distributed/thread_ranks.h); each rank resumes from its own
// directory, which shows that rank 1 loads what rank 0 chose rather than look for itself.
struct RankResume {
  CheckpointManager::Resumed resumed;
  float value = 0;
};

std::vector<RankResume> ResumeOnTwoRanks(const CellConfig& cell,
                                         const std::vector<std::string>& dirs) {
  std::vector<RankResume> out(2);
  const std::string error = testing::OnThreadRanks(2, [&](C10dCollective& collective, int r) {
    DataParallel parallel(&collective, at::kCPU);
    CheckpointManager checkpoints(dirs[r], cell, kTokensPerStep, at::kCPU);
    Model model;
    model.Fill(-1);
    out[r].resumed = checkpoints.Resume(parallel, model.linear.get(), &model.optimizer);
    out[r].value = model.Value();
  });
  EXPECT_EQ(error, "");
  return out;
}

TEST(CheckpointManagerTest, RanksResumeFromTheCheckpointRankZeroChooses) {
  TempDir lead_dir, other_dir;
  ASSERT_FALSE(lead_dir.path().empty());
  ASSERT_FALSE(other_dir.path().empty());
  const CellConfig cell = Cell({{"checkpoint_every_tokens", 1024}, {"keep_checkpoints", 4}});
  for (const TempDir* dir : {&lead_dir, &other_dir}) {
    CheckpointManager checkpoints(dir->path(), cell, kTokensPerStep, at::kCPU);
    Model model;
    SaveOverTheRun(checkpoints, model);
  }
  // Rank 0's newest is damaged, rank 1's is not: both take 3072.
  ASSERT_EQ(::truncate(lead_dir.File(CheckpointFileName(4096)).c_str(), 100), 0);
  ::testing::internal::CaptureStderr();
  std::vector<RankResume> ranks = ResumeOnTwoRanks(cell, {lead_dir.path(), other_dir.path()});
  ::testing::internal::GetCapturedStderr();
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(ranks[r].resumed.error, std::nullopt) << r;
    ASSERT_TRUE(ranks[r].resumed.progress.has_value()) << r;
    EXPECT_EQ(ranks[r].resumed.progress->tokens, 3072) << r;
    EXPECT_EQ(ranks[r].value, 3072) << r;
  }

  // Rank 1 lacks the file rank 0 chose: every rank fails, each saying why.
  ASSERT_EQ(::unlink(other_dir.File(CheckpointFileName(3072)).c_str()), 0);
  ::testing::internal::CaptureStderr();
  ranks = ResumeOnTwoRanks(cell, {lead_dir.path(), other_dir.path()});
  ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(ranks[0].resumed.error.has_value());
  EXPECT_NE(ranks[0].resumed.error->find("another rank could not load"), std::string::npos)
      << *ranks[0].resumed.error;
  ASSERT_TRUE(ranks[1].resumed.error.has_value());
  EXPECT_NE(ranks[1].resumed.error->find(CheckpointFileName(3072)), std::string::npos)
      << *ranks[1].resumed.error;
}

}  // namespace
}  // namespace onset::model
