// Runs the onset-train executable the way a worker does.
//
// Plain POSIX calls instead of std::filesystem: libtorch.so exports its own copies of some
// std::filesystem symbols, and remove_all resolved to a broken one (segfault) in this binary.
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/testing/temp_dir.h"

extern char** environ;

namespace onset::model {
namespace {

struct RunResult {
  int exit_code = -1;
  std::string out, err;
};

// `s` with backslashes, double quotes and dollars escaped for a double-quoted sh argument.
std::string Escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '\\' || c == '"' || c == '$' || c == '`') out += '\\';
    out += c;
  }
  return out;
}

class TrainBinaryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* bin_dir = std::getenv("ONSET_BIN_DIR");
    if (!bin_dir) GTEST_SKIP() << "ONSET_BIN_DIR is not set (run through ctest)";
    binary_ = std::string(bin_dir) + "/onset-train";
    struct stat st;
    ASSERT_EQ(::stat(binary_.c_str(), &st), 0) << binary_;
  }

  std::string ckpt() const { return dir_ + "/ckpt"; }

  std::string WriteConfig(const std::string& text) {
    std::string p = dir_ + "/config.json";
    std::ofstream(p) << text;
    return p;
  }

  // Runs onset-train with `args`, after `env` (shell assignments, "A=1 B=2 ") when given.
  RunResult Run(const std::string& args, const std::string& env = "") {
    const std::string out = dir_ + "/out.txt", err = dir_ + "/err.txt";
    const std::string cmd = env + binary_ + " " + args + " >" + out + " 2>" + err;
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

  void ClearCheckpoints() {
    if (DIR* d = ::opendir(ckpt().c_str())) {
      while (const dirent* e = ::readdir(d)) ::unlink((ckpt() + "/" + e->d_name).c_str());
      ::closedir(d);
    }
  }

  std::string binary_;
  const testutil::TempDir tmp_;
  const std::string dir_ = tmp_.path();
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
  r = Run("--config=" + dir_ + "/c.json --threads 0");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--threads: must be an integer between 1 and 1024, got '0'\nusage: "),
            std::string::npos)
      << r.err;
  EXPECT_EQ(Run("export --config c.json --out o").exit_code, 2);
  EXPECT_EQ(Run("prepare --bogus x").exit_code, 2);
}

TEST_F(TrainBinaryTest, HelpExitsZeroWithTheUsage) {
  for (const char* args : {"--help", "-h", "export --help", "dump-logits -h", "prepare --help"}) {
    RunResult r = Run(args);
    EXPECT_EQ(r.exit_code, 0) << args << ": " << r.err;
    EXPECT_EQ(r.out.rfind("usage: onset-train", 0), 0u) << args << ": " << r.out;
  }
}

TEST_F(TrainBinaryTest, TinyRunPrintsTheProtocol) {
  std::string path = WriteConfig(R"({
    "model": {"layers": 2, "d_model": 32, "heads": 2, "seq_len": 32, "arch": "swa:1", "window": 8},
    "train": {"tokens": 4096, "batch_tokens": 512, "micro_batch": 8, "log_every_steps": 2},
    "eval": {"heldout_seqs": 2, "niah_lengths": [32, 64], "niah_records": 2,
             "niah_samples": 1}})");
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
  for (int i = 0; i < 400; ++i)
    text += "the quick brown fox jumps over the lazy dog " + std::to_string(i) + "\n";
  std::ofstream(dir_ + "/text.txt") << text;
  RunResult p = Run("prepare --out " + dir_ + "/text.bin " + dir_ + "/text.txt");
  ASSERT_EQ(p.exit_code, 0) << p.err;
  EXPECT_NE(p.out.find(std::to_string(text.size()) + " tokens (uint16, byte vocabulary)"),
            std::string::npos)
      << p.out;

  const std::string config = R"({
    "model": {"layers": 1, "d_model": 16, "heads": 2, "seq_len": 32},
    "train": {"tokens": 1024, "batch_tokens": 256, "micro_batch": 8},
    "data": {"background": "file", "path": ")" +
                             dir_ + R"(/text.bin", "vocab_size": VOCAB},
    "eval": {"heldout_seqs": 2, "niah_lengths": [48], "niah_samples": 1}})";
  auto with_vocab = [&](const std::string& v) {
    std::string c = config;
    c.replace(c.find("VOCAB"), 5, v);
    return WriteConfig(c);
  };
  RunResult ok =
      Run("--config " + with_vocab("256") + " --device cpu --threads 1 --checkpoint-dir " + ckpt());
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_NE(ok.out.find("\"event\":\"done\""), std::string::npos) << ok.out;

  // Letters are above id 100: the first token of the file is already out of the vocabulary.
  const std::string path = with_vocab("100");
  RunResult bad = Run("--config " + path + " --device cpu --checkpoint-dir " + ckpt() + "2");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find(path + ": data.path: " + dir_ +
                         "/text.bin: token id 116 at token 0 "
                         "(byte offset 0) is outside the vocabulary"),
            std::string::npos)
      << bad.err;
  EXPECT_TRUE(bad.out.empty()) << bad.out;
}

TEST_F(TrainBinaryTest, DumpLogitsRefusesIdsPastTheConfigsVocabulary) {
  const std::string path = WriteConfig(R"({"model": {"layers": 1, "d_model": 16, "heads": 2}})");
  RunResult r = Run("dump-logits --config " + path + " --checkpoint " + ckpt() + " --tokens 1,264");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--tokens: id 264 is not below the model's vocabulary size 264"),
            std::string::npos)
      << r.err;
}

// SIGTERM (a worker handing its job back): checkpoint, a "stopped" event, exit code 4; then
// --resume finishes the run.
TEST_F(TrainBinaryTest, SigtermCheckpointsAndExitsFour) {
  const std::string path = WriteConfig(R"({
    "model": {"layers": 1, "d_model": 16, "heads": 2, "seq_len": 16},
    "train": {"tokens": 20000000, "batch_tokens": 128, "micro_batch": 8, "log_every_steps": 1},
    "eval": {"heldout_seqs": 1, "niah_lengths": [48], "niah_samples": 1}})");
  const std::string out = dir_ + "/out.txt";
  const std::string script = binary_ + " --config " + path +
                             " --device cpu --threads 1 --checkpoint-dir " + ckpt() + " >" + out +
                             " 2>" + dir_ +
                             "/err.txt & pid=$!; "
                             "for i in $(seq 600); do grep -q '\"train\"' " +
                             out +
                             " 2>/dev/null && break; "
                             "sleep 0.05; done; kill -TERM $pid; wait $pid; echo $? >" +
                             dir_ + "/rc0";
  ASSERT_EQ(std::system(("sh -c \"" + Escape(script) + "\"").c_str()), 0);
  std::ifstream rc(dir_ + "/rc0");
  int code = -1;
  rc >> code;
  EXPECT_EQ(code, 4);
  std::stringstream text;
  text << std::ifstream(out).rdbuf();
  EXPECT_NE(text.str().find("\"event\":\"stopped\""), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("\"event\":\"checkpoint\""), std::string::npos) << text.str();
}

TEST_F(TrainBinaryTest, MetricsGoToTheRequestedFd) {
  std::string path = WriteConfig(R"({
    "model": {"layers": 1, "d_model": 16, "heads": 2, "seq_len": 16},
    "train": {"tokens": 256, "batch_tokens": 128, "micro_batch": 8},
    "eval": {"heldout_seqs": 1, "niah_lengths": [48], "niah_samples": 1}})");
  const std::string metrics = dir_ + "/metrics.jsonl";
  RunResult r =
      Run("--config " + path + " --checkpoint-dir " + ckpt() + " --metrics-fd 3 3>" + metrics);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(r.out.empty());
  std::stringstream s;
  s << std::ifstream(metrics).rdbuf();
  EXPECT_NE(s.str().find(R"({"event":"done","tokens":256)"), std::string::npos) << s.str();
}

// Metrics lines with their "at_unix_ms" fields taken out.
std::string WithoutTimes(const std::string& lines) {
  return std::regex_replace(lines, std::regex(R"("at_unix_ms":[0-9]+,)"), "");
}

TEST_F(TrainBinaryTest, ResumesFromItsCheckpointsAndRefusesAnotherConfig) {
  const char* cell = R"({
    "model": {"layers": 1, "d_model": 16, "heads": 2, "seq_len": 16},
    "train": {"tokens": 512, "batch_tokens": 128, "micro_batch": 8, "lr": %s},
    "eval": {"heldout_seqs": 1, "niah_lengths": [48], "niah_samples": 1}})";
  auto config = [&](const char* lr) {
    char text[512];
    std::snprintf(text, sizeof text, cell, lr);
    return WriteConfig(text);
  };
  const std::string flags = " --device cpu --threads 1 --checkpoint-dir " + ckpt();
  RunResult fresh = Run("--config " + config("0.003") + flags + " --resume");
  ASSERT_EQ(fresh.exit_code, 0) << fresh.err;
  EXPECT_NE(fresh.err.find("no valid checkpoint in " + ckpt() + ", starting fresh"),
            std::string::npos)
      << fresh.err;
  // Every line carries the wall time it was measured at; the rest is compared without it.
  EXPECT_TRUE(std::regex_search(fresh.out, std::regex(R"(\{"event":"checkpoint","tokens":128,)"
                                                      R"("at_unix_ms":[0-9]{13},)")))
      << fresh.out;
  EXPECT_NE(WithoutTimes(fresh.out).find(
                R"({"event":"checkpoint","tokens":128,"metrics":{"checkpoint/bytes":)"),
            std::string::npos)
      << fresh.out;
  // Default retention: the newest two of 128, 256, 384, 512.
  struct stat st;
  EXPECT_NE(::stat((ckpt() + "/ckpt-000000000256.pt").c_str(), &st), 0);
  ASSERT_EQ(::stat((ckpt() + "/ckpt-000000000384.pt").c_str(), &st), 0);
  ASSERT_EQ(::unlink((ckpt() + "/ckpt-000000000512.pt").c_str()), 0);

  RunResult resumed = Run("--config " + config("0.003") + flags + " --resume");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_NE(
      WithoutTimes(resumed.out)
          .find(R"({"event":"resume","tokens":384,"metrics":{"train/resumed_at_tokens":384.0}})"),
      std::string::npos)
      << resumed.out;
  EXPECT_EQ(resumed.out.find(R"("event":"train","tokens":256)"), std::string::npos) << resumed.out;
  EXPECT_NE(resumed.out.find(R"({"event":"done","tokens":512)"), std::string::npos) << resumed.out;

  RunResult other = Run("--config " + config("0.001") + flags + " --resume");
  EXPECT_EQ(other.exit_code, 2);
  EXPECT_NE(other.err.find("ckpt-000000000512.pt: written for a different config (train.lr: "
                           "checkpoint has 0.003, config has 0.001)"),
            std::string::npos)
      << other.err;
  EXPECT_TRUE(other.out.empty()) << other.out;
}

std::string Slurp(const std::string& path) {
  std::stringstream s;
  s << std::ifstream(path).rdbuf();
  return s.str();
}

std::vector<nlohmann::json> Events(const std::string& out) {
  std::vector<nlohmann::json> events;
  std::istringstream lines(out);
  std::string line;
  while (std::getline(lines, line)) events.push_back(nlohmann::json::parse(line));
  return events;
}

// Data parallel: the same events as one process, at the same tokens, with the same losses to
// float rounding (the ranks sum their shares' gradients in another order).
void ExpectSameRun(const std::vector<nlohmann::json>& ranks,
                   const std::vector<nlohmann::json>& one) {
  ASSERT_EQ(ranks.size(), one.size());
  for (size_t i = 0; i < one.size(); ++i) {
    EXPECT_EQ(ranks[i]["event"], one[i]["event"]) << i;
    EXPECT_EQ(ranks[i]["tokens"], one[i]["tokens"]) << i;
    for (const char* m : {"train/loss", "eval/heldout_loss"}) {
      if (!one[i]["metrics"].contains(m)) continue;
      const double a = ranks[i]["metrics"][m], b = one[i]["metrics"][m];
      EXPECT_NEAR(a, b, 1e-4 * std::abs(b)) << one[i]["event"] << " " << m;
    }
  }
}

constexpr const char* kDataParallelCell = R"({
    "model": {"layers": 2, "d_model": 32, "heads": 2, "seq_len": 32, "arch": "swa:1", "window": 8},
    "train": {"tokens": 2048, "batch_tokens": 480, "micro_batch": 4, "log_every_steps": 1},
    "eval": {"heldout_seqs": 2, "niah_lengths": [48], "niah_samples": 1}})";

TEST_F(TrainBinaryTest, NprocTwoReportsWhatOneProcessReports) {
  // 15 sequences a step: shares of 7 and 8; 5 steps (the last one past the budget).
  const std::string path = WriteConfig(kDataParallelCell);
  const std::string flags =
      "--config " + path + " --device cpu --threads 2 --checkpoint-dir " + ckpt();
  RunResult one = Run(flags);
  ASSERT_EQ(one.exit_code, 0) << one.err;
  ClearCheckpoints();
  RunResult two = Run(flags + " --nproc 2");
  ASSERT_EQ(two.exit_code, 0) << two.err;
  EXPECT_NE(two.err.find("started rank 1 of 2"), std::string::npos) << two.err;
  EXPECT_NE(two.err.find("data parallel over 2 ranks"), std::string::npos) << two.err;
  ExpectSameRun(Events(two.out), Events(one.out));
  EXPECT_EQ(Events(two.out).back()["event"], "done");
  // Rank 0 wrote the checkpoints: a resumed single process continues from them.
  RunResult resumed = Run(flags + " --resume");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_NE(resumed.out.find(R"({"event":"resume","tokens":2400)"), std::string::npos)
      << resumed.out;
}

TEST_F(TrainBinaryTest, TorchrunStyleRanksMeetOverTcp) {
  // A free port: bind to 0, read it, let it go.
  int sock = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(sock, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(sock, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  socklen_t len = sizeof addr;
  ASSERT_EQ(::getsockname(sock, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const int port = ntohs(addr.sin_port);
  ::close(sock);

  const std::string path = WriteConfig(kDataParallelCell);
  const std::string env =
      "WORLD_SIZE=2 LOCAL_WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=" + std::to_string(port);
  const std::string train =
      binary_ + " --config " + path + " --device cpu --threads 2" + " --checkpoint-dir " + ckpt();
  const std::string script = "(RANK=1 LOCAL_RANK=1 " + env + " " + train + " >" + dir_ +
                             "/out1.txt 2>" + dir_ + "/err1.txt; echo $? >" + dir_ + "/rc1) & " +
                             "RANK=0 LOCAL_RANK=0 " + env + " " + train + " >" + dir_ +
                             "/out.txt 2>" + dir_ + "/err.txt; echo $? >" + dir_ + "/rc0; wait";
  ASSERT_EQ(std::system(("sh -c '" + script + "'").c_str()), 0);
  EXPECT_EQ(Slurp(dir_ + "/rc0"), "0\n") << Slurp(dir_ + "/err.txt");
  EXPECT_EQ(Slurp(dir_ + "/rc1"), "0\n") << Slurp(dir_ + "/err1.txt");
  EXPECT_TRUE(Slurp(dir_ + "/out1.txt").empty()) << "only rank 0 reports";
  const std::vector<nlohmann::json> events = Events(Slurp(dir_ + "/out.txt"));
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back()["event"], "done");
  EXPECT_EQ(events.back()["tokens"], 2400);
}

TEST_F(TrainBinaryTest, ARankThatDiesFailsTheRunNamingIt) {
  const std::string path = WriteConfig(R"({
    "model": {"layers": 1, "d_model": 16, "heads": 2, "seq_len": 16},
    "train": {"tokens": 100000000, "batch_tokens": 128, "micro_batch": 8, "log_every_steps": 1},
    "eval": {"heldout_seqs": 1, "niah_lengths": [48], "niah_samples": 1}})");
  const std::string out = dir_ + "/out.txt", err = dir_ + "/err.txt";
  std::vector<std::string> args = {binary_, "--config",         path,  "--device",
                                   "cpu",   "--threads",        "2",   "--nproc",
                                   "2",     "--checkpoint-dir", ckpt()};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t launcher = -1;
  ASSERT_EQ(posix_spawn(&launcher, binary_.c_str(), &actions, nullptr, argv.data(), environ), 0);
  posix_spawn_file_actions_destroy(&actions);

  // Once both ranks train, kill rank 1.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  std::string text;
  size_t at = std::string::npos;
  while (std::chrono::steady_clock::now() < deadline) {
    text = Slurp(err);
    at = text.find("started rank 1 of 2 (pid ");
    if (at != std::string::npos && Slurp(out).find(R"("event":"train")") != std::string::npos) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_NE(at, std::string::npos) << text;
  const int rank1 = std::atoi(text.c_str() + at + std::string("started rank 1 of 2 (pid ").size());
  ASSERT_GT(rank1, 0);
  ASSERT_EQ(::kill(rank1, SIGKILL), 0);

  int status = 0;
  pid_t done = 0;
  while (done == 0 && std::chrono::steady_clock::now() < deadline) {
    done = ::waitpid(launcher, &status, WNOHANG);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (done == 0) ::kill(launcher, SIGKILL);
  ASSERT_EQ(done, launcher) << "the launcher did not stop";
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 1);
  text = Slurp(err);
  EXPECT_NE(text.find("onset-train: rank 1 of 2 (pid " + std::to_string(rank1) +
                      ") ended: killed by signal 9"),
            std::string::npos)
      << text;
}

TEST_F(TrainBinaryTest, BadDataParallelSetupsExitTwo) {
  const std::string path = WriteConfig(kDataParallelCell);
  RunResult r = Run("--config " + path + " --device cpu", "WORLD_SIZE=2 RANK=0 LOCAL_RANK=0 ");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("MASTER_ADDR: must name rank 0's host"), std::string::npos) << r.err;
  r = Run("--config " + path + " --device cpu --nproc 2",
          "WORLD_SIZE=2 RANK=0 LOCAL_RANK=0 ONSET_STORE_FILE=/nonexistent/store ");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--nproc 2: this process is already rank 0 of 2"), std::string::npos)
      << r.err;
  r = Run("--config " + path + " --nproc 0");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--nproc: must be an integer between 1 and 1024, got '0'"),
            std::string::npos)
      << r.err;
}

}  // namespace
}  // namespace onset::model
