#include "tests/sim/cluster.h"

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <random>
#include <thread>

#include "common/auth_token.h"
#include "tests/sim/journal.h"

namespace onset::sim {
namespace {

namespace fs = std::filesystem;

// A loopback port that nothing holds now, below the kernel's ephemeral range: no connection any
// process makes (nor any bind to port 0) is given it while onsetd is down between two of its
// starts. Chosen at random, so that simulators running side by side seldom try the same one (a
// start that finds it taken all the same picks another: Cluster::Start).
int FreePort() {
  int low = 32768;
  std::ifstream("/proc/sys/net/ipv4/ip_local_port_range") >> low;
  const int first = std::max(1024, low - 16384);
  std::mt19937 pick(std::random_device{}());
  for (int tries = 0; tries < 200 && low - first >= 1024; ++tries) {
    const int port = std::uniform_int_distribution<int>(first, low - 1)(pick);
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr = testutil::LoopbackAddress(port);
    const bool free = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
    ::close(fd);
    if (free) return port;
  }
  // No room below the ephemeral range: one the kernel gives.
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr = testutil::LoopbackAddress(0);
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

// A process's stderr, appended to a file line by line.
std::function<void(const std::string&)> ToFile(const std::string& path) {
  auto out = std::make_shared<std::ofstream>(path, std::ios::app);
  auto mu = std::make_shared<std::mutex>();
  return [out, mu](const std::string& line) {
    std::lock_guard<std::mutex> lock(*mu);
    *out << line << "\n";
    out->flush();
  };
}

bool Alive(const std::unique_ptr<worker::Process>& p) {
  return p != nullptr && !p->WaitFor(std::chrono::milliseconds(0));
}

}  // namespace

Cluster::Cluster(ClusterConfig config)
    : config_(std::move(config)), db_(config_.dir + "/onset.db") {
  fs::create_directories(config_.dir);
  fs::create_directories(JournalDir());
  workers_.resize(config_.workers);
  UsePort(FreePort());
}

void Cluster::UsePort(int port) {
  port_ = port;
  address_ = "127.0.0.1:" + std::to_string(port_);
  proxies_.clear();
  for (int i = 0; i < workers(); ++i) {
    proxies_.push_back(std::make_unique<testutil::TcpProxy>(port_));
  }
}

Cluster::~Cluster() { Stop(); }

std::string Cluster::Db() const { return db_; }
std::string Cluster::TokenFile() const { return config_.dir + "/" + common::kTokenFileName; }
std::string Cluster::RotationDir() const { return config_.dir + "/rotation"; }
std::string Cluster::JournalDir() const { return config_.dir + "/journal"; }
std::string Cluster::Log(const std::string& name) const {
  return config_.dir + "/" + name + ".log";
}

bool Cluster::Start(std::string* why) {
  // Made before onsetd's first start, which then finds and keeps it.
  absl::StatusOr<std::string> token =
      common::LoadOrCreateTokenFile(config_.dir + "/" + common::kTokenFileName);
  if (!token.ok()) {
    *why = std::string(token.status().message());
    return false;
  }
  token_ = *token;
  // A port found free can be taken before onsetd binds it (by another program choosing the same
  // way): then another port, as long as no worker knows the first.
  for (int tries = 1; !StartDaemon(why); ++tries) {
    if (tries == 5 || why->find("cannot listen on") == std::string::npos) return false;
    daemon_->Wait();
    daemon_.reset();
    UsePort(FreePort());
  }
  for (int i = 0; i < workers(); ++i) StartWorker(i);
  return true;
}

bool Cluster::StartDaemon(std::string* why) {
  if (Alive(daemon_)) return true;
  worker::SpawnOptions options;
  options.program = config_.bin_dir + "/onsetd";
  options.args = {"--db",
                  Db(),
                  "--listen",
                  address_,
                  "--token-file",
                  config_.dir + "/" + common::kTokenFileName,
                  "--lease-ttl-ms",
                  std::to_string(config_.lease_ttl_ms),
                  "--heartbeat-interval-ms",
                  std::to_string(config_.heartbeat_ms),
                  "--retry-backoff-ms",
                  std::to_string(config_.retry_backoff_ms),
                  "--max-failures",
                  std::to_string(config_.max_failures),
                  "--checkpoint-root",
                  config_.dir + "/checkpoints"};
  if (config_.stalled_reader_limit_ms > 0) {
    options.args.push_back("--stalled-reader-limit-ms");
    options.args.push_back(std::to_string(config_.stalled_reader_limit_ms));
  }
  if (config_.backup_every_s > 0) {
    for (const std::string& arg :
         {std::string("--backup-every"), std::to_string(config_.backup_every_s),
          std::string("--backup-dir"), RotationDir(), std::string("--backup-keep"),
          std::to_string(config_.backup_keep)}) {
      options.args.push_back(arg);
    }
  }
  options.env["LD_PRELOAD"] = config_.bin_dir + "/libonset-sim-full-disk.so";
  options.env["ONSET_SIM_FULL_DISK"] = config_.dir + "/disk-full";
  options.on_stderr_line = ToFile(Log("onsetd"));
  absl::StatusOr<std::unique_ptr<worker::Process>> p = launcher_.Spawn(std::move(options));
  if (!p.ok()) {
    *why = std::string(p.status().message());
    return false;
  }
  daemon_ = std::move(*p);
  // Up once its port takes a connection.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < deadline) {
    if (!Alive(daemon_)) {
      *why = "onsetd exited: " + daemon_->StderrTail();
      return false;
    }
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr = testutil::LoopbackAddress(port_);
    const bool up = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
    ::close(fd);
    if (up) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  *why = "onsetd did not listen on " + address_ + " within 30 s";
  return false;
}

void Cluster::SignalDaemon(int sig) {
  if (!daemon_) return;
  ::kill(daemon_->pid(), sig);
  if (!daemon_->WaitFor(std::chrono::seconds(20))) daemon_->Terminate(std::chrono::seconds(1));
  daemon_->Wait();
}

bool Cluster::DaemonRuns() const { return Alive(daemon_); }

void Cluster::ServeDb(std::string path) { db_ = std::move(path); }

bool Cluster::RestoreBackup(const std::string& backup, std::string* why) {
  if (Alive(daemon_)) SignalDaemon(SIGTERM);
  std::error_code ec;
  for (const char* suffix : {"-wal", "-shm"}) fs::remove(db_ + suffix, ec);
  fs::copy_file(backup, db_, fs::copy_options::overwrite_existing, ec);
  if (ec) {
    *why = "cannot copy " + backup + " to " + db_ + ": " + ec.message();
    return false;
  }
  return StartDaemon(why);
}

CliRun Cluster::RunCli(std::vector<std::string> args, std::chrono::milliseconds limit) {
  worker::SpawnOptions options;
  options.program = config_.bin_dir + "/onset";
  options.args = {"--coordinator", address_, "--token-file", TokenFile()};
  options.args.insert(options.args.end(), args.begin(), args.end());
  options.stderr_tail_lines = 200;
  auto out = std::make_shared<std::string>();
  auto mu = std::make_shared<std::mutex>();
  options.on_stdout_line = [out, mu](std::string line) {
    std::lock_guard<std::mutex> lock(*mu);
    *out += line + "\n";
  };
  CliRun run;
  absl::StatusOr<std::unique_ptr<worker::Process>> p = launcher_.Spawn(std::move(options));
  if (!p.ok()) {
    run.err = std::string(p.status().message());
    return run;
  }
  if (!(*p)->WaitFor(limit)) (*p)->Terminate(std::chrono::seconds(2));
  const worker::ExitStatus status = (*p)->Wait();
  run.code = status.Exited() ? status.exit_code : 128 + status.signal;
  run.err = (*p)->StderrTail();
  std::lock_guard<std::mutex> lock(*mu);
  run.out = *out;
  return run;
}

void Cluster::StartWorker(int i) {
  if (Alive(workers_[i])) return;
  const std::string name = "w" + std::to_string(i);
  worker::SpawnOptions options;
  options.program = config_.bin_dir + "/onset-worker";
  options.args = {"--coordinator",     proxies_[i]->address(),
                  "--trainer",         config_.bin_dir + "/onset-sim-trainer",
                  "--work-dir",        config_.dir + "/" + name,
                  "--checkpoint-root", config_.dir + "/checkpoints",
                  "--slots",           "1",
                  "--stop-grace",      "2",
                  "--token-file",      config_.dir + "/" + common::kTokenFileName};
  options.env["ONSET_SIM_JOURNAL"] = JournalDir();
  options.env["ONSET_SIM_STEP_MS"] = std::to_string(config_.step_ms);
  options.env["ONSET_SIM_CRASH_PERMILLE"] = std::to_string(config_.crash_permille);
  options.on_stderr_line = ToFile(Log(name));
  absl::StatusOr<std::unique_ptr<worker::Process>> p = launcher_.Spawn(std::move(options));
  if (p.ok()) workers_[i] = std::move(*p);
}

void Cluster::SignalWorker(int i, int sig) {
  if (Alive(workers_[i])) ::kill(workers_[i]->pid(), sig);
}

bool Cluster::WaitWorker(int i, std::chrono::milliseconds wait) {
  if (!workers_[i]) return true;
  return workers_[i]->WaitFor(wait);
}

bool Cluster::WorkerRuns(int i) const { return Alive(workers_[i]); }

void Cluster::Cut(int i) { proxies_[i]->Cut(); }
void Cluster::Heal(int i) {
  proxies_[i]->Heal();
  proxies_[i]->DelayReplies(0);
}
void Cluster::DelayReplies(int i, int ms) { proxies_[i]->DelayReplies(ms); }

void Cluster::SetDiskFull(bool full) {
  const std::string flag = config_.dir + "/disk-full";
  if (full) {
    std::ofstream(flag) << "full\n";
  } else {
    std::error_code ec;
    fs::remove(flag, ec);
  }
}

bool Cluster::DiskFull() const {
  std::error_code ec;
  return fs::exists(config_.dir + "/disk-full", ec);
}

void Cluster::Restore() {
  SetDiskFull(false);
  for (int i = 0; i < workers(); ++i) Heal(i);
  std::string why;
  if (!DaemonRuns()) StartDaemon(&why);
  for (int i = 0; i < workers(); ++i) {
    if (!WorkerRuns(i)) StartWorker(i);
  }
}

void Cluster::Stop() {
  SetDiskFull(false);
  for (int i = 0; i < workers(); ++i) Heal(i);
  for (auto& w : workers_) {
    if (Alive(w)) w->Terminate(std::chrono::seconds(10));
  }
  if (Alive(daemon_)) daemon_->Terminate(std::chrono::seconds(10));
}

}  // namespace onset::sim
