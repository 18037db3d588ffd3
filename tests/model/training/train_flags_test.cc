#include "model/training/train_flags.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "base/trainer_contract.h"

namespace onset::model {
namespace {

std::optional<std::string> Parse(std::vector<const char*> args, TrainFlags* flags) {
  args.insert(args.begin(), "onset-train");
  return ParseTrainFlags(static_cast<int>(args.size()), args.data(), flags);
}

TEST(TrainFlagsTest, ParsesBothForms) {
  TrainFlags f;
  ASSERT_FALSE(
      Parse({"--config", "c.json", "--metrics-fd=5", "--device", "cpu", "--threads=2"}, &f));
  EXPECT_EQ(f.config_path, "c.json");
  EXPECT_EQ(f.metrics_fd, 5);
  EXPECT_EQ(f.device, "cpu");
  EXPECT_EQ(f.threads, 2);
  EXPECT_EQ(f.checkpoint_dir, "checkpoints");
  EXPECT_FALSE(f.resume);
  ASSERT_FALSE(Parse({"--resume", "--config=c.json", "--checkpoint-dir", "/tmp/ck"}, &f));
  EXPECT_TRUE(f.resume);
  EXPECT_EQ(f.checkpoint_dir, "/tmp/ck");
  EXPECT_EQ(f.nproc, 1);
  EXPECT_EQ(f.dist_timeout_s, 3600);
  ASSERT_FALSE(Parse({"--config=c.json", "--nproc", "4", "--dist-timeout=600"}, &f));
  EXPECT_EQ(f.nproc, 4);
  EXPECT_EQ(f.dist_timeout_s, 600);
  EXPECT_EQ(f.attention_backend, "auto");
  ASSERT_FALSE(Parse({"--config=c.json", "--attention-backend", "sdpa-band"}, &f));
  EXPECT_EQ(f.attention_backend, "sdpa-band");
  EXPECT_EQ(f.branch_from, "");
  ASSERT_FALSE(Parse({"--config=c.json", "--resume", "--branch-from", "/t/ckpt-1.pt"}, &f));
  EXPECT_EQ(f.branch_from, "/t/ckpt-1.pt");
  ASSERT_FALSE(Parse({"--config=c.json", "--branch-from=/t/ckpt-2.pt"}, &f));
  EXPECT_EQ(f.branch_from, "/t/ckpt-2.pt");
  EXPECT_EQ(Parse({"--config=c.json", "--branch-from", ""}, &f),
            "--branch-from: must name a checkpoint file");
}

// The checkpoints a worker names, each once, in the order given; and the supervisor's descriptor.
TEST(TrainFlagsTest, ResumeFromKeepsTheNamedFilesInOrder) {
  TrainFlags f;
  ASSERT_FALSE(Parse({"--config=c.json", "--resume-from", "/a/ckpt-2.pt",
                      "--resume-from=/b/ckpt-1.pt", "--supervisor-fd", "4"},
                     &f));
  EXPECT_EQ(f.resume_from, (std::vector<std::string>{"/a/ckpt-2.pt", "/b/ckpt-1.pt"}));
  EXPECT_EQ(f.supervisor_fd, 4);
  EXPECT_FALSE(f.resume);
  EXPECT_TRUE(
      Parse({"--config=c.json", "--resume", "--resume-from", "/a/ckpt-2.pt"}, &f).has_value());
  EXPECT_EQ(Parse({"--config=c.json", "--resume-from", ""}, &f),
            "--resume-from: must name a checkpoint file");
  TrainFlags none;
  ASSERT_FALSE(Parse({"--config=c.json"}, &none));
  EXPECT_TRUE(none.resume_from.empty());
  EXPECT_EQ(none.supervisor_fd, -1);
}

TEST(TrainFlagsTest, RejectsBadInput) {
  TrainFlags f;
  EXPECT_EQ(Parse({}, &f), "--config is required");
  EXPECT_EQ(Parse({"--config"}, &f), "--config: 1 required TEXT missing");
  EXPECT_EQ(Parse({"--config", "c", "--device", "tpu"}, &f),
            "--device: must be auto, cpu or cuda, got 'tpu'");
  EXPECT_EQ(Parse({"--config", "c", "--threads", "0"}, &f),
            "--threads: must be an integer between 1 and 1024, got '0'");
  EXPECT_EQ(Parse({"--config", "c", "--verbose"}, &f),
            "The following argument was not expected: --verbose");
  EXPECT_EQ(Parse({"--confg", "c"}, &f), "The following arguments were not expected: c --confg");
  EXPECT_EQ(Parse({"--config", "c", "--checkpoint-dir", ""}, &f),
            "--checkpoint-dir: must name a directory");
  EXPECT_EQ(Parse({"--config", "c", "--checkpoint-dir="}, &f),
            "--checkpoint-dir: 1 required TEXT missing");
  EXPECT_EQ(Parse({"--config="}, &f), "--config: 1 required TEXT missing");
  EXPECT_EQ(Parse({"--config", ""}, &f), "--config: must name a file");
  EXPECT_EQ(Parse({"--config", "c", "--metrics-fd", "0"}, &f),
            "--metrics-fd: must be a file descriptor number >= 1, got '0'");
  EXPECT_EQ(Parse({"--config", "c", "--nproc", "0"}, &f),
            "--nproc: must be an integer between 1 and 1024, got '0'");
  EXPECT_EQ(Parse({"--config", "c", "--nproc=two"}, &f),
            "--nproc: must be an integer between 1 and 1024, got 'two'");
  EXPECT_EQ(Parse({"--config", "c", "--dist-timeout", "-5"}, &f),
            "--dist-timeout: must be a number of seconds between 1 and 604800, got '-5'");
  EXPECT_EQ(Parse({"--config", "c", "--attention-backend=fast"}, &f),
            "--attention-backend: must be auto, custom, flash, sdpa-band, blocked or math, got "
            "'fast'");
}

TEST(TrainFlagsTest, HelpNeedsNoOtherFlag) {
  TrainFlags f;
  ASSERT_FALSE(Parse({"--help"}, &f));
  EXPECT_TRUE(f.help);
  ASSERT_FALSE(Parse({"-h"}, &f));
  EXPECT_TRUE(f.help);
  ASSERT_FALSE(Parse({"--config", "c"}, &f));
  EXPECT_FALSE(f.help);
}

TEST(TrainFlagsTest, NumbersAreDecimalAndTheLastOfARepeatedFlagWins) {
  TrainFlags f;
  ASSERT_FALSE(
      Parse({"--config", "a", "--threads", "010", "--config=b", "--nproc", "2", "--nproc=3"}, &f));
  EXPECT_EQ(f.threads, 10);  // not octal
  EXPECT_EQ(f.config_path, "b");
  EXPECT_EQ(f.nproc, 3);
  ASSERT_FALSE(Parse({"--config", "a"}, &f));
  EXPECT_FALSE(f.threads.has_value());
}

// The flag names are the contract the worker builds its command line from.
TEST(TrainFlagsTest, AcceptsEveryFlagOfTheContract) {
  TrainFlags f;
  ASSERT_EQ(Parse({trainer::kFlagConfig, "c.json", trainer::kFlagMetricsFd, "4",
                   trainer::kFlagCheckpointDir, "ck", trainer::kFlagResume, trainer::kFlagDevice,
                   "cpu", trainer::kFlagThreads, "3", trainer::kFlagNproc, "2",
                   trainer::kFlagDistTimeout, "60", trainer::kFlagAttentionBackend, "math"},
                  &f),
            std::nullopt);
  EXPECT_EQ(f.config_path, "c.json");
  EXPECT_EQ(f.metrics_fd, 4);
  EXPECT_EQ(f.checkpoint_dir, "ck");
  EXPECT_TRUE(f.resume);
  EXPECT_EQ(f.device, "cpu");
  EXPECT_EQ(f.threads, 3);
  EXPECT_EQ(f.nproc, 2);
  EXPECT_EQ(f.dist_timeout_s, 60);
  EXPECT_EQ(f.attention_backend, "math");
}

TEST(TrainFlagsTest, ArgsWithoutDropsTheFlagInEitherForm) {
  const char* argv[] = {"onset-train", "--config",  "c",           "--nproc",   "2",
                        "--resume",    "--nproc=4", "--nproc-x=1", "--threads", "1"};
  EXPECT_EQ(
      ArgsWithout(trainer::kFlagNproc, 10, argv),
      (std::vector<std::string>{"--config", "c", "--resume", "--nproc-x=1", "--threads", "1"}));
}

TEST(TrainFlagsTest, LoadNamesFileAndKey) {
  const std::string path = ::testing::TempDir() + "onset_train_flags_test.json";
  auto load = [&](const std::string& text) {
    std::ofstream(path) << text;
    CellConfig c;
    auto e = LoadCellConfig(path, &c);
    return e ? *e : std::string("ok");
  };
  EXPECT_EQ(load(R"({"train": {"lr": "x"}})"), path + ": train.lr: must be a number");
  EXPECT_EQ(load(R"({"model": {"layers": 2}})"), "ok");
  EXPECT_EQ(load("{\"model\": ").rfind(path + ": not valid JSON: parse error at line 1", 0), 0u);
  EXPECT_EQ(load("").rfind(path + ": not valid JSON", 0), 0u);
  std::remove(path.c_str());
  CellConfig c;
  EXPECT_EQ(LoadCellConfig(path, &c), path + ": cannot open: No such file or directory");
}

// The --config file may hold a WSD trunk's spec instead of a cell's config.
TEST(TrainFlagsTest, LoadTrainConfigReadsATrunkSpecOrACell) {
  const std::string path = ::testing::TempDir() + "onset_train_flags_trunk_test.json";
  const nlohmann::json cell = {
      {"train",
       {{"tokens", 4096}, {"batch_tokens", 128}, {"schedule", "wsd"}, {"warmup_tokens", 256}}},
      {"model", {{"seq_len", 32}}}};
  auto load = [&](const nlohmann::json& j, CellConfig* c, std::optional<TrunkSpec>* trunk) {
    std::ofstream(path) << j.dump();
    auto e = LoadTrainConfig(path, c, trunk);
    return e ? *e : std::string("ok");
  };
  CellConfig c;
  std::optional<TrunkSpec> trunk;
  const nlohmann::json spec = {
      {"trunk", {{"until", 3072}, {"eval_at", {1024, 3072}}, {"branch_points", {1536, 3072}}}},
      {"cell", cell}};
  ASSERT_EQ(load(spec, &c, &trunk), "ok");
  ASSERT_TRUE(trunk.has_value());
  EXPECT_EQ(trunk->until, 3072);
  EXPECT_EQ(trunk->branch_points, (std::vector<int64_t>{1536, 3072}));
  EXPECT_EQ(c.train.tokens, 4096);

  ASSERT_EQ(load(cell, &c, &trunk), "ok");
  EXPECT_FALSE(trunk.has_value());

  nlohmann::json bad = spec;
  bad["trunk"]["until"] = 3000;
  EXPECT_EQ(load(bad, &c, &trunk),
            path + ": trunk.until: 3000 is not a positive step boundary (a multiple of 128)");
  bad = spec;
  bad["cell"]["train"]["lr"] = "x";
  EXPECT_EQ(load(bad, &c, &trunk), path + ": cell.train.lr: must be a number");
  std::remove(path.c_str());
}

}  // namespace
}  // namespace onset::model
