// Runs the onset-train executable the way a worker does.
//
// Plain POSIX calls instead of std::filesystem: libtorch.so exports its own copies of some
// std::filesystem symbols, and remove_all resolved to a broken one (segfault) in this binary.
#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

namespace onset::model {
namespace {

struct RunResult {
  int exit_code = -1;
  std::string out, err;
};

class TrainBinaryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* bin_dir = std::getenv("ONSET_BIN_DIR");
    if (!bin_dir) GTEST_SKIP() << "ONSET_BIN_DIR is not set (run through ctest)";
    binary_ = std::string(bin_dir) + "/onset-train";
    struct stat st;
    ASSERT_EQ(::stat(binary_.c_str(), &st), 0) << binary_;
    std::string tmpl = (std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp");
    tmpl += "/onset_train_test_XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    if (dir_.empty()) return;
    if (DIR* d = ::opendir(ckpt().c_str())) {
      while (const dirent* e = ::readdir(d)) ::unlink((ckpt() + "/" + e->d_name).c_str());
      ::closedir(d);
    }
    ::rmdir(ckpt().c_str());
    for (const char* f : {"config.json", "out.txt", "err.txt", "metrics.jsonl", "text.txt",
                          "text.bin"}) {
      ::unlink((dir_ + "/" + f).c_str());
    }
    ::rmdir(dir_.c_str());
  }

  std::string ckpt() const { return dir_ + "/ckpt"; }

  std::string WriteConfig(const std::string& text) {
    std::string p = dir_ + "/config.json";
    std::ofstream(p) << text;
    return p;
  }

  RunResult Run(const std::string& args) {
    const std::string out = dir_ + "/out.txt", err = dir_ + "/err.txt";
    const std::string cmd = binary_ + " " + args + " >" + out + " 2>" + err;
    int status = std::system(cmd.c_str());
    RunResult r;
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    auto slurp = [](const std::string& p) {
      std::stringstream s;
      s << std::ifstream(p).rdbuf();
      return s.str();
    };
    r.out = slurp(out);
    r.err = slurp(err);
    return r;
  }

  std::string binary_, dir_;
};

TEST_F(TrainBinaryTest, BadConfigExitsTwoNamingTheKey) {
  std::string path = WriteConfig(R"({"train": {"lr": "fast"}})");
  RunResult r = Run("--config " + path);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find(path + ": train.lr: must be a number"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty());
}

TEST_F(TrainBinaryTest, MissingFileAndBadFlagsExitTwo) {
  RunResult r = Run("--config " + dir_ + "/nope.json");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("nope.json: cannot open"), std::string::npos) << r.err;
  EXPECT_EQ(Run("--bogus").exit_code, 2);
  EXPECT_EQ(Run("").exit_code, 2);
}

TEST_F(TrainBinaryTest, TinyRunPrintsTheProtocol) {
  std::string path = WriteConfig(R"({
    "model": {"layers": 2, "d_model": 32, "heads": 2, "seq_len": 32, "arch": "swa:1", "window": 8},
    "train": {"tokens": 4096, "batch_tokens": 512, "micro_batch": 8, "log_every_steps": 2},
    "eval": {"heldout_seqs": 2, "niah_lengths": [32, 64], "niah_samples": 1}})");
  RunResult r = Run("--config " + path + " --device cpu --threads 1 --checkpoint-dir " + ckpt());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::istringstream lines(r.out);
  std::string line;
  std::vector<nlohmann::json> events;
  while (std::getline(lines, line)) {
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << line;
    ASSERT_TRUE(j["event"].is_string()) << line;
    ASSERT_TRUE(j["tokens"].is_number_integer()) << line;
    ASSERT_TRUE(j["metrics"].is_object()) << line;
    for (const auto& [name, value] : j["metrics"].items()) EXPECT_TRUE(value.is_number()) << line;
    events.push_back(j);
  }
  ASSERT_GE(events.size(), 4u);
  EXPECT_EQ(events.front()["event"], "start");
  EXPECT_EQ(events.front()["tokens"], 0);
  EXPECT_EQ(events.back()["event"], "done");
  EXPECT_EQ(events.back()["tokens"], 4096);
  EXPECT_GT(events.back()["metrics"]["train/tokens_per_second"].get<double>(), 0);
  int train = 0, eval = 0, checkpoint = 0;
  nlohmann::json last_eval;
  for (const auto& e : events) {
    train += e["event"] == "train";
    eval += e["event"] == "eval";
    checkpoint += e["event"] == "checkpoint";
    if (e["event"] == "eval") last_eval = e;
  }
  EXPECT_EQ(train, 4);       // 8 steps, every 2
  EXPECT_EQ(eval, 4);        // every 1024 tokens (budget / 4), the last one at the end
  EXPECT_EQ(checkpoint, 4);  // the same default cadence
  EXPECT_EQ(last_eval["tokens"], 4096);
  EXPECT_TRUE(last_eval["metrics"].contains("niah/acc_beyond_window"));
}

TEST_F(TrainBinaryTest, PreparedTextTrainsAndABadTokenFileExitsTwo) {
  std::string text;
  for (int i = 0; i < 400; ++i) text += "the quick brown fox jumps over the lazy dog " + std::to_string(i) + "\n";
  std::ofstream(dir_ + "/text.txt") << text;
  RunResult p = Run("prepare --out " + dir_ + "/text.bin " + dir_ + "/text.txt");
  ASSERT_EQ(p.exit_code, 0) << p.err;
  EXPECT_NE(p.out.find(std::to_string(text.size()) + " tokens (uint16, byte vocabulary)"),
            std::string::npos) << p.out;

  const std::string config = R"({
    "model": {"layers": 1, "d_model": 16, "heads": 2, "seq_len": 32},
    "train": {"tokens": 1024, "batch_tokens": 256, "micro_batch": 8},
    "data": {"background": "file", "path": ")" + dir_ + R"(/text.bin", "vocab_size": VOCAB},
    "eval": {"heldout_seqs": 2, "niah_lengths": [32], "niah_samples": 1}})";
  auto with_vocab = [&](const std::string& v) {
    std::string c = config;
    c.replace(c.find("VOCAB"), 5, v);
    return WriteConfig(c);
  };
  RunResult ok = Run("--config " + with_vocab("256") + " --device cpu --threads 1 --checkpoint-dir " + ckpt());
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_NE(ok.out.find("\"event\":\"done\""), std::string::npos) << ok.out;

  // Letters are above id 100: the first token of the file is already out of the vocabulary.
  const std::string path = with_vocab("100");
  RunResult bad = Run("--config " + path + " --device cpu --checkpoint-dir " + ckpt() + "2");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find(path + ": data.path: " + dir_ + "/text.bin: token id 116 at token 0 "
                         "(byte offset 0) is outside the vocabulary"),
            std::string::npos) << bad.err;
  EXPECT_TRUE(bad.out.empty()) << bad.out;
}

TEST_F(TrainBinaryTest, DumpLogitsRefusesIdsPastTheConfigsVocabulary) {
  const std::string path = WriteConfig(R"({"model": {"layers": 1, "d_model": 16, "heads": 2}})");
  RunResult r = Run("dump-logits --config " + path + " --checkpoint " + ckpt() + " --tokens 1,264");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--tokens: id 264 is not below the model's vocabulary size 264"),
            std::string::npos) << r.err;
}

TEST_F(TrainBinaryTest, MetricsGoToTheRequestedFd) {
  std::string path = WriteConfig(R"({
    "model": {"layers": 1, "d_model": 16, "heads": 2, "seq_len": 16},
    "train": {"tokens": 256, "batch_tokens": 128, "micro_batch": 8},
    "eval": {"heldout_seqs": 1, "niah_lengths": [16], "niah_samples": 1}})");
  const std::string metrics = dir_ + "/metrics.jsonl";
  RunResult r =
      Run("--config " + path + " --checkpoint-dir " + ckpt() + " --metrics-fd 3 3>" + metrics);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(r.out.empty());
  std::stringstream s;
  s << std::ifstream(metrics).rdbuf();
  EXPECT_NE(s.str().find(R"({"event":"done","tokens":256)"), std::string::npos) << s.str();
}

TEST_F(TrainBinaryTest, ResumesFromItsCheckpointsAndRefusesAnotherConfig) {
  const char* cell = R"({
    "model": {"layers": 1, "d_model": 16, "heads": 2, "seq_len": 16},
    "train": {"tokens": 512, "batch_tokens": 128, "micro_batch": 8, "lr": %s},
    "eval": {"heldout_seqs": 1, "niah_lengths": [16], "niah_samples": 1}})";
  auto config = [&](const char* lr) {
    char text[512];
    std::snprintf(text, sizeof text, cell, lr);
    return WriteConfig(text);
  };
  const std::string flags = " --device cpu --threads 1 --checkpoint-dir " + ckpt();
  RunResult fresh = Run("--config " + config("0.003") + flags + " --resume");
  ASSERT_EQ(fresh.exit_code, 0) << fresh.err;
  EXPECT_NE(fresh.err.find("no valid checkpoint in " + ckpt() + ", starting fresh"),
            std::string::npos) << fresh.err;
  EXPECT_NE(fresh.out.find(R"({"event":"checkpoint","tokens":128,"metrics":{"checkpoint/bytes":)"),
            std::string::npos) << fresh.out;
  // Default retention: the newest two of 128, 256, 384, 512.
  struct stat st;
  EXPECT_NE(::stat((ckpt() + "/ckpt-000000000256.pt").c_str(), &st), 0);
  ASSERT_EQ(::stat((ckpt() + "/ckpt-000000000384.pt").c_str(), &st), 0);
  ASSERT_EQ(::unlink((ckpt() + "/ckpt-000000000512.pt").c_str()), 0);

  RunResult resumed = Run("--config " + config("0.003") + flags + " --resume");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_NE(resumed.out.find(R"({"event":"resume","tokens":384,"metrics":{}})"), std::string::npos)
      << resumed.out;
  EXPECT_EQ(resumed.out.find(R"("event":"train","tokens":256)"), std::string::npos) << resumed.out;
  EXPECT_NE(resumed.out.find(R"({"event":"done","tokens":512)"), std::string::npos) << resumed.out;

  RunResult other = Run("--config " + config("0.001") + flags + " --resume");
  EXPECT_EQ(other.exit_code, 2);
  EXPECT_NE(other.err.find("ckpt-000000000512.pt: written for a different config (train.lr: "
                           "checkpoint has 0.003, config has 0.001)"),
            std::string::npos) << other.err;
  EXPECT_TRUE(other.out.empty()) << other.out;
}

}  // namespace
}  // namespace onset::model
