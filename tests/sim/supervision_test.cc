// Trainers die with their supervisor, whatever ends it, and a lease is counted from when its
// worker asked: the real onsetd, onset-worker and `onset run` with the scripted trainer
// (scripted_trainer.cc), whose journal says when each trainer started and stopped and whether
// two of one cell ever ran at once. Skips when a binary is missing from ONSET_BIN_DIR.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <thread>

#include "cli/client/study_client.h"
#include "common/auth_token.h"
#include "tests/sim/journal.h"
#include "tests/testing/tcp_proxy.h"
#include "worker/process_launcher.h"

namespace onset::sim {
namespace {

namespace fs = std::filesystem;
using ::testing::IsEmpty;

constexpr char kStudy[] = R"(name: held
model: {layers: 2, d_model: 32, heads: 2, seq_len: 64}
train: {batch_tokens: 1024, micro_batch: 16, log_every_steps: 1, checkpoint_every_tokens: 4096}
eval: {every_tokens: 200K, heldout_seqs: 2, niah_lengths: [64], niah_samples: 1}
grid:
  arch: [full]
  tokens: [STEPS]
  seeds: 1
)";

std::string BinDir() {
  const char* dir = std::getenv("ONSET_BIN_DIR");
  return dir == nullptr ? "" : dir;
}

// Whether process `pid` still runs (a zombie nobody reaped counts as gone).
bool Runs(int pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  if (!std::getline(stat, text)) return false;
  const size_t close = text.rfind(')');
  return close != std::string::npos && close + 2 < text.size() && text[close + 2] != 'Z';
}

bool WaitFor(const std::function<bool()>& done, std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return done();
}

class SupervisionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* b : {"onsetd", "onset-worker", "onset", "onset-sim-trainer"}) {
      if (!fs::exists(fs::path(BinDir()) / b)) GTEST_SKIP() << b << " not built";
    }
    dir_ = fs::temp_directory_path() /
           ("onset-supervision-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "journal");
  }
  void TearDown() override {
    for (auto& p : processes_) {
      if (p) p->Terminate(std::chrono::seconds(5));
    }
    if (!HasFailure()) fs::remove_all(dir_);
  }

  std::string Journal() const { return (dir_ / "journal").string(); }

  std::map<std::string, std::string> TrainerEnv(int step_ms = 50) const {
    return {{"ONSET_SIM_JOURNAL", Journal()}, {"ONSET_SIM_STEP_MS", std::to_string(step_ms)}};
  }

  worker::Process* Spawn(const std::string& binary, std::vector<std::string> args,
                         std::map<std::string, std::string> env = {}) {
    worker::SpawnOptions options;
    options.program = BinDir() + "/" + binary;
    options.args = std::move(args);
    options.env = std::move(env);
    options.stderr_tail_lines = 100;
    absl::StatusOr<std::unique_ptr<worker::Process>> p = launcher_.Spawn(std::move(options));
    EXPECT_TRUE(p.ok()) << p.status();
    if (!p.ok()) return nullptr;
    processes_.push_back(std::move(*p));
    return processes_.back().get();
  }

  std::string StudyFile(int steps) const {
    std::string text = kStudy;
    text.replace(text.find("STEPS"), 5, std::to_string(steps * 1024));
    const fs::path file = dir_ / "held.yaml";
    std::ofstream(file) << text;
    return file.string();
  }

  // The journal's entries of `kind`.
  std::vector<JournalEntry> Entries(const std::string& kind) const {
    std::vector<JournalEntry> out;
    for (const JournalEntry& e : ReadJournal(Journal())) {
      if (e.kind == kind) out.push_back(e);
    }
    return out;
  }

  // Every VIOLATION the trainers wrote.
  std::vector<std::string> Violations() const {
    std::vector<std::string> out;
    for (const JournalEntry& e : Entries("VIOLATION")) out.push_back(e.Field("what"));
    return out;
  }

  // The pid of the newest trainer that started and is still running; 0 after `limit`.
  int RunningTrainer(std::chrono::milliseconds limit = std::chrono::seconds(60)) {
    int pid = 0;
    WaitFor(
        [&] {
          std::vector<JournalEntry> started = Entries("START");
          pid = started.empty() || !Runs(started.back().pid) ? 0 : started.back().pid;
          return pid != 0;
        },
        limit);
    return pid;
  }

  // onsetd on the given port, with short leases.
  worker::Process* Daemon(const std::string& address) {
    return Spawn("onsetd",
                 {"--db", (dir_ / "onset.db").string(), "--listen", address, "--token-file",
                  (dir_ / common::kTokenFileName).string(), "--lease-ttl-ms", "3000",
                  "--heartbeat-interval-ms", "300", "--retry-backoff-ms", "200",
                  "--checkpoint-root", (dir_ / "checkpoints").string()});
  }

  fs::path dir_;
  worker::PosixProcessLauncher launcher_;
  std::vector<std::unique_ptr<worker::Process>> processes_;
};

// A free loopback port.
int FreePort() {
  testutil::TcpProxy probe(1);
  return probe.port();
}

// `onset run` hung up on (SIGHUP), killed outright
// (SIGKILL) or interrupted twice (Ctrl-C, Ctrl-C) leaves no trainer running, and the next `onset
// run` finishes the cell with one trainer at a time.
TEST_F(SupervisionTest, OnsetRunEndedAnyWayLeavesNoTrainerAndTheNextRunFinishes) {
  const std::string study = StudyFile(/*steps=*/80);
  const std::vector<std::string> args = {
      "run",         study, "--data-dir", (dir_ / "data").string(),
      "--workers",   "1",   "--trainer",  BinDir() + "/onset-sim-trainer",
      "--no-results"};
  for (int sig : {SIGHUP, SIGKILL, SIGINT}) {
    SCOPED_TRACE(sigabbrev_np(sig));
    worker::Process* run = Spawn("onset", args, TrainerEnv());
    ASSERT_NE(run, nullptr);
    const int trainer = RunningTrainer();
    ASSERT_NE(trainer, 0) << run->StderrTail();
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    ::kill(run->pid(), sig);
    if (sig == SIGINT) {
      // The second Ctrl-C: out at once, and the trainers with it.
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      ::kill(run->pid(), SIGINT);
    }
    ASSERT_TRUE(run->WaitFor(std::chrono::seconds(30))) << run->StderrTail();
    EXPECT_TRUE(WaitFor([&] { return !Runs(trainer); }, std::chrono::seconds(3)))
        << "the trainer outlived onset run";
  }
  worker::Process* last = Spawn("onset", args, TrainerEnv());
  ASSERT_TRUE(last->WaitFor(std::chrono::minutes(2))) << last->StderrTail();
  EXPECT_TRUE(last->Wait().Succeeded()) << last->StderrTail();
  EXPECT_THAT(Violations(), IsEmpty());
  // It resumed from a checkpoint: one run from scratch, however often it was interrupted.
  EXPECT_EQ(Entries("NEWRUN").size(), 1u);
}

// A worker killed outright takes its trainer with it at once (not after its lease, nor at the
// trainer's next metrics line); one hung up on hands its cell back cleanly, like SIGTERM.
TEST_F(SupervisionTest, AWorkerEndedAnyWayTakesItsTrainerWithIt) {
  const std::string address = "127.0.0.1:" + std::to_string(FreePort());
  ASSERT_NE(Daemon(address), nullptr);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  absl::StatusOr<std::string> token =
      common::ReadTokenFile((dir_ / common::kTokenFileName).string());
  ASSERT_TRUE(WaitFor(
      [&] {
        token = common::ReadTokenFile((dir_ / common::kTokenFileName).string());
        return token.ok();
      },
      std::chrono::seconds(10)));
  cli::StudyClient client(address, common::ClientSecurity{*token, ""});
  std::ifstream in(StudyFile(/*steps=*/400));
  std::stringstream text;
  text << in.rdbuf();
  ASSERT_TRUE(WaitFor([&] { return client.Submit("held.yaml", text.str()).ok(); },
                      std::chrono::seconds(10)));
  const std::vector<std::string> worker_args = {
      "--coordinator",     address,
      "--trainer",         BinDir() + "/onset-sim-trainer",
      "--work-dir",        (dir_ / "work").string(),
      "--checkpoint-root", (dir_ / "checkpoints").string(),
      "--token-file",      (dir_ / common::kTokenFileName).string()};
  for (int sig : {SIGKILL, SIGHUP, SIGQUIT}) {
    SCOPED_TRACE(sigabbrev_np(sig));
    worker::Process* worker = Spawn("onset-worker", worker_args, TrainerEnv(100));
    ASSERT_NE(worker, nullptr);
    const int trainer = RunningTrainer();
    ASSERT_NE(trainer, 0) << worker->StderrTail();
    ::kill(worker->pid(), sig);
    if (sig == SIGQUIT) ::kill(worker->pid(), SIGQUIT);  // a second one: out at once
    EXPECT_TRUE(WaitFor([&] { return !Runs(trainer); }, std::chrono::seconds(3)))
        << "the trainer outlived its worker";
    ASSERT_TRUE(worker->WaitFor(std::chrono::seconds(20))) << worker->StderrTail();
  }
  // The hung-up worker's trainer stopped on SIGTERM and checkpointed: its cell was handed back.
  bool stopped = false;
  for (const JournalEntry& e : Entries("END")) stopped = stopped || e.Field("how") == "stopped";
  EXPECT_TRUE(stopped);
  EXPECT_THAT(Violations(), IsEmpty());
}

// The worker counts its lease from when it asked. A reply held back past the lease
// (slow network) starts no trainer; the claim, never confirmed, costs the cell no failure, and
// the cell runs once the network is well again.
TEST_F(SupervisionTest, ALeaseReplyThatComesTooLateStartsNoTrainerAndCostsNothing) {
  const int port = FreePort();
  const std::string address = "127.0.0.1:" + std::to_string(port);
  ASSERT_NE(Daemon(address), nullptr);
  testutil::TcpProxy proxy(port);
  absl::StatusOr<std::string> token;
  ASSERT_TRUE(WaitFor(
      [&] {
        token = common::ReadTokenFile((dir_ / common::kTokenFileName).string());
        return token.ok();
      },
      std::chrono::seconds(10)));
  cli::StudyClient client(address, common::ClientSecurity{*token, ""});
  std::ifstream in(StudyFile(/*steps=*/20));
  std::stringstream text;
  text << in.rdbuf();
  ASSERT_TRUE(WaitFor([&] { return client.Submit("held.yaml", text.str()).ok(); },
                      std::chrono::seconds(10)));
  proxy.DelayReplies(8000);  // longer than the 3 s lease
  worker::Process* worker = Spawn(
      "onset-worker",
      {"--coordinator", proxy.address(), "--trainer", BinDir() + "/onset-sim-trainer", "--work-dir",
       (dir_ / "work").string(), "--checkpoint-root", (dir_ / "checkpoints").string(),
       "--token-file", (dir_ / common::kTokenFileName).string()},
      TrainerEnv());
  ASSERT_NE(worker, nullptr);
  // The registration's reply comes late too; then a lease reply does.
  std::this_thread::sleep_for(std::chrono::seconds(14));
  EXPECT_TRUE(Entries("START").empty()) << "a trainer started on a lease that had run out";
  proxy.DelayReplies(0);
  ASSERT_TRUE(WaitFor(
      [&] {
        absl::StatusOr<v1::GetStudyResponse> s = client.Get("held");
        return s.ok() && s->cells_size() == 1 && s->cells(0).state() == v1::CELL_STATE_SUCCEEDED;
      },
      std::chrono::seconds(60)))
      << worker->StderrTail();
  absl::StatusOr<v1::GetStudyResponse> s = client.Get("held");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->cells(0).failures(), 0);
  EXPECT_THAT(Violations(), IsEmpty());
}

}  // namespace
}  // namespace onset::sim
