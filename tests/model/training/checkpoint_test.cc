// Checkpoints and resumption. Plain POSIX calls instead of std::filesystem: libtorch.so exports
// its own copies of some std::filesystem symbols (see tests/model/train_main_test.cc).
#include "model/training/checkpoint.h"

#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include <cstdlib>
#include <ctime>
#include <string>
#include <vector>

#include "base/metric_names.h"
#include "model/training/trainer.h"
#include "tests/testing/temp_dir.h"

namespace onset::model {
namespace {

// 512 tokens per step (16 sequences of 32), 8 steps.
CellConfig TinyCell(const nlohmann::json& train_extra = nlohmann::json::object()) {
  nlohmann::json train = {{"tokens", 4096}, {"batch_tokens", 512},  {"micro_batch", 8},
                          {"seed", 3},      {"log_every_steps", 3}, {"schedule", "wsd"}};
  train.update(train_extra);
  CellConfig c;
  auto e = ParseCellConfig({{"model",
                             {{"layers", 2},
                              {"d_model", 32},
                              {"heads", 2},
                              {"seq_len", 32},
                              {"arch", "swa:1"},
                              {"window", 8}}},
                            {"train", train},
                            {"eval",
                             {{"every_tokens", 1536},
                              {"heldout_seqs", 2},
                              {"niah_lengths", {48}},
                              {"niah_depths", {0.5}},
                              {"niah_samples", 1}}}},
                           &c);
  EXPECT_FALSE(e) << e->ToString();
  return c;
}

class CheckpointTest : public ::testing::Test {
 protected:
  std::vector<int64_t> Tokens() const {
    std::vector<int64_t> t;
    for (const CheckpointFile& f : ListCheckpoints(dir_)) t.push_back(f.tokens);
    return t;
  }
  std::string Path(int64_t tokens) const { return dir_ + "/" + CheckpointFileName(tokens); }

  const testutil::TempDir tmp_;
  const std::string root_ = tmp_.path();
  const std::string dir_ = root_ + "/ckpt";
};

void ExpectSameParameters(Transformer& a, Transformer& b) {
  auto pa = a->named_parameters(), pb = b->named_parameters();
  ASSERT_EQ(pa.size(), pb.size());
  for (const auto& p : pa) EXPECT_TRUE(at::equal(p.value(), pb[p.key()])) << p.key();
}

// The train and eval events from `tokens` on, without what measures the machine.
std::vector<MetricsEvent> Reported(const MemorySink& sink, int64_t tokens) {
  std::vector<MetricsEvent> out;
  for (MetricsEvent e : sink.events) {
    if ((e.event != "train" && e.event != "eval") || e.tokens <= tokens) continue;
    for (auto it = e.metrics.begin(); it != e.metrics.end();) {
      const std::string& name = it->first;
      it = metric::DescribesTheMachine(name) ? e.metrics.erase(it) : std::next(it);
    }
    out.push_back(e);
  }
  return out;
}

void ExpectSameEvents(const std::vector<MetricsEvent>& a, const std::vector<MetricsEvent>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].event, b[i].event);
    EXPECT_EQ(a[i].tokens, b[i].tokens);
    EXPECT_EQ(a[i].step, b[i].step);
    EXPECT_EQ(a[i].metrics, b[i].metrics) << a[i].Format() << "\n" << b[i].Format();
  }
}

TEST_F(CheckpointTest, NamesSortByTokens) {
  EXPECT_EQ(CheckpointFileName(524288), "ckpt-000000524288.pt");
  EXPECT_LT(CheckpointFileName(99'999), CheckpointFileName(2'000'000'000));
  EXPECT_TRUE(ListCheckpoints(dir_).empty());  // a missing directory has none
}

TEST_F(CheckpointTest, ResumeContinuesExactlyAsIfNeverStopped) {
  MemorySink straight_sink;
  Trainer straight(TinyCell(), at::kCPU, &straight_sink);
  TrainResult full = straight.Run();
  ASSERT_EQ(full.step_losses.size(), 8u);

  // The same run, checkpointing every 4 steps; then "stop" after step 4 by dropping the last.
  MemorySink first_sink;
  Trainer first(TinyCell({{"checkpoint_every_tokens", 2048}}), at::kCPU, &first_sink, dir_);
  EXPECT_EQ(first.Run().step_losses, full.step_losses);
  EXPECT_EQ(Tokens(), (std::vector<int64_t>{2048, 4096}));
  int checkpoints = 0;
  for (const MetricsEvent& e : first_sink.events) {
    if (e.event != "checkpoint") continue;
    ++checkpoints;
    EXPECT_GT(e.metrics.at("checkpoint/bytes"), 10'000);
    EXPECT_GE(e.metrics.at("checkpoint/seconds"), 0);
  }
  EXPECT_EQ(checkpoints, 2);
  ASSERT_EQ(::unlink(Path(4096).c_str()), 0);

  // A new trainer (a new process in real life) resumes at 2048 tokens and finishes.
  MemorySink resumed_sink;
  Trainer resumed(TinyCell({{"checkpoint_every_tokens", 2048}}), at::kCPU, &resumed_sink, dir_);
  ASSERT_FALSE(resumed.Resume());
  TrainResult rest = resumed.Run();
  EXPECT_EQ(rest.tokens, 4096);
  EXPECT_EQ(rest.steps, 8);
  EXPECT_EQ(rest.step_losses,
            std::vector<double>(full.step_losses.begin() + 4, full.step_losses.end()));
  ExpectSameParameters(straight.model(), resumed.model());
  // Events after the checkpoint are the straight run's, including the train/loss window that
  // spans the restart (steps 4-6).
  ExpectSameEvents(Reported(straight_sink, 2048), Reported(resumed_sink, 2048));
  ASSERT_GE(resumed_sink.events.size(), 2u);
  EXPECT_EQ(resumed_sink.events[0].event, "start");
  EXPECT_EQ(resumed_sink.events[1].event, "resume");
  EXPECT_EQ(resumed_sink.events[1].tokens, 2048);
  EXPECT_EQ(resumed_sink.events.back().event, "done");
  EXPECT_EQ(resumed_sink.events.back().tokens, 4096);
}

TEST_F(CheckpointTest, CorruptCheckpointsAreSkippedWithAMessage) {
  MemorySink straight_sink;
  TrainResult full = Trainer(TinyCell(), at::kCPU, &straight_sink).Run();
  const CellConfig cell = TinyCell({{"checkpoint_every_tokens", 1024}, {"keep_checkpoints", 3}});
  MemorySink sink;
  Trainer(cell, at::kCPU, &sink, dir_).Run();
  ASSERT_EQ(Tokens(), (std::vector<int64_t>{2048, 3072, 4096}));

  // Cut the newest short, flip bytes in the middle of the next one.
  struct stat st;
  ASSERT_EQ(::stat(Path(4096).c_str(), &st), 0);
  ASSERT_EQ(::truncate(Path(4096).c_str(), st.st_size / 2), 0);
  {
    int fd = ::open(Path(3072).c_str(), O_RDWR);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::fstat(fd, &st), 0);
    char byte;
    ASSERT_EQ(::pread(fd, &byte, 1, st.st_size / 2), 1);
    byte = static_cast<char>(byte ^ 0x5a);
    ASSERT_EQ(::pwrite(fd, &byte, 1, st.st_size / 2), 1);
    ::close(fd);
  }

  MemorySink resumed_sink;
  Trainer resumed(cell, at::kCPU, &resumed_sink, dir_);
  ::testing::internal::CaptureStderr();
  auto error = resumed.Resume();
  const std::string err = ::testing::internal::GetCapturedStderr();
  ASSERT_FALSE(error) << *error;
  EXPECT_NE(err.find(Path(4096) + ": corrupt (truncated?"), std::string::npos) << err;
  EXPECT_NE(err.find(Path(3072) + ": corrupt (checksum mismatch), skipping"), std::string::npos)
      << err;
  EXPECT_NE(err.find("resuming from " + Path(2048)), std::string::npos) << err;
  TrainResult rest = resumed.Run();
  EXPECT_EQ(rest.step_losses,
            std::vector<double>(full.step_losses.begin() + 4, full.step_losses.end()));

  // Nothing valid left: a fresh start, said so.
  for (int64_t t : Tokens()) ASSERT_EQ(::truncate(Path(t).c_str(), 100), 0);
  MemorySink fresh_sink;
  Trainer fresh(cell, at::kCPU, &fresh_sink, dir_);
  ::testing::internal::CaptureStderr();
  ASSERT_FALSE(fresh.Resume());
  const std::string fresh_err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(fresh_err.find("no valid checkpoint in " + dir_ + ", starting fresh"),
            std::string::npos)
      << fresh_err;
  EXPECT_EQ(fresh.Run().step_losses, full.step_losses);
}

TEST_F(CheckpointTest, KeepsTheNewestAndThePinnedOnes) {
  // Every 1024 tokens, keep 2, pin 600 (rounded up to the step boundary at 1024).
  MemorySink sink;
  Trainer(TinyCell({{"checkpoint_every_tokens", 1024},
                    {"keep_checkpoints", 2},
                    {"keep_checkpoints_at", {600}}}),
          at::kCPU, &sink, dir_)
      .Run();
  EXPECT_EQ(Tokens(), (std::vector<int64_t>{1024, 3072, 4096}));

  // A pin off the cadence gets a checkpoint of its own; the temporary file of a write that
  // stopped an hour ago is not listed and goes with the next pruning, while one being written
  // now (by another trainer of the cell) stays.
  ASSERT_EQ(::unlink(Path(1024).c_str()), 0);
  const std::string stale = dir_ + "/" + CheckpointFileName(9) + ".tmp";
  const std::string live = dir_ + "/" + CheckpointFileName(10) + ".tmp-77-00000000000000aa";
  ::close(::open(stale.c_str(), O_CREAT | O_WRONLY, 0644));
  ::close(::open(live.c_str(), O_CREAT | O_WRONLY, 0644));
  const struct timeval hour_ago[2] = {{::time(nullptr) - 3601, 0}, {::time(nullptr) - 3601, 0}};
  ASSERT_EQ(::utimes(stale.c_str(), hour_ago), 0);
  EXPECT_EQ(Tokens(), (std::vector<int64_t>{3072, 4096}));
  Trainer(TinyCell({{"checkpoint_every_tokens", 4096},
                    {"keep_checkpoints", 1},
                    {"keep_checkpoints_at", {1500}}}),
          at::kCPU, &sink, dir_)
      .Run();
  EXPECT_EQ(Tokens(), (std::vector<int64_t>{1536, 4096}));
  struct stat st;
  EXPECT_NE(::stat(stale.c_str(), &st), 0) << "a left-over temporary file survived pruning";
  EXPECT_EQ(::stat(live.c_str(), &st), 0) << "another writer's temporary file was pruned";
}

TEST_F(CheckpointTest, RefusesACheckpointOfAnotherConfig) {
  MemorySink sink;
  Trainer(TinyCell({{"checkpoint_every_tokens", 2048}}), at::kCPU, &sink, dir_).Run();

  // Cadence and retention may change between runs; the trajectory may not.
  Trainer same(TinyCell({{"checkpoint_every_tokens", 1024}, {"keep_checkpoints", 5}}), at::kCPU,
               &sink, dir_);
  EXPECT_FALSE(same.Resume());

  Trainer other(TinyCell({{"lr", 0.001}}), at::kCPU, &sink, dir_);
  const auto before = other.model()->parameters()[0].clone();
  auto error = other.Resume();
  ASSERT_TRUE(error);
  EXPECT_EQ(*error, Path(4096) +
                        ": written for a different config (train.lr: checkpoint has 0.003, config "
                        "has 0.001); resume with the config it was written for, or use another "
                        "--checkpoint-dir");
  EXPECT_TRUE(at::equal(before, other.model()->parameters()[0]));
}

// Every mixer's parameters survive a checkpoint: module names must be valid TorchScript
// identifiers (a submodule called "in" once made every L and D checkpoint unreadable).
TEST_F(CheckpointTest, EveryMixerRoundTrips) {
  CellConfig c;
  ASSERT_FALSE(ParseCellConfig({{"model",
                                 {{"layers", 4},
                                  {"d_model", 32},
                                  {"heads", 4},
                                  {"kv_heads", 2},
                                  {"seq_len", 32},
                                  {"arch", "LDSF"},
                                  {"window", 8},
                                  {"tie_embeddings", false}}}},
                               &c));
  torch::manual_seed(5);
  Transformer saved(c.model);
  torch::optim::AdamW saved_opt(saved->parameters(), torch::optim::AdamWOptions(1e-3));
  SaveCheckpoint(dir_, c, TrainProgress{}, *saved, saved_opt, at::kCPU);

  Transformer loaded(c.model);
  torch::optim::AdamW loaded_opt(loaded->parameters(), torch::optim::AdamWOptions(1e-3));
  TrainProgress progress;
  ASSERT_FALSE(LoadCheckpoint(Path(0), c, at::kCPU, &progress, loaded.ptr().get(), &loaded_opt));
  ExpectSameParameters(saved, loaded);

  Transformer weights_only(c.model);
  std::string config_text;
  ASSERT_FALSE(LoadCheckpointWeights(Path(0), at::kCPU, weights_only.ptr().get(), &config_text));
  ExpectSameParameters(saved, weights_only);
  EXPECT_EQ(config_text, c.CanonicalText());
}

}  // namespace
}  // namespace onset::model
