#include "bench/onsetd_process.h"

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "absl/status/status.h"
#include "common/auth_token.h"

namespace onset::bench {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

std::string ReadLine(const fs::path& path, std::chrono::seconds within, pid_t pid) {
  for (auto deadline = Clock::now() + within; Clock::now() < deadline;) {
    std::ifstream in(path);
    std::string line;
    if (in && std::getline(in, line) && !line.empty()) return line;
    if (::waitpid(pid, nullptr, WNOHANG) != 0) return "";  // it died
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return "";
}

int64_t KbAfter(const std::string& line, size_t prefix) { return std::stoll(line.substr(prefix)); }

}  // namespace

ProcessSample SampleProcess(pid_t pid) {
  ProcessSample sample;
  const fs::path proc = "/proc/" + std::to_string(pid);
  std::error_code ec;
  for (fs::directory_iterator it(proc / "fd", ec), end; !ec && it != end; it.increment(ec)) {
    ++sample.fds;
  }
  std::ifstream status(proc / "status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("Threads:", 0) == 0) sample.threads = KbAfter(line, 8);
    if (line.rfind("VmRSS:", 0) == 0) sample.rss_kb = KbAfter(line, 6);
    if (line.rfind("VmHWM:", 0) == 0) sample.peak_rss_kb = KbAfter(line, 6);
  }
  return sample;
}

absl::StatusOr<std::unique_ptr<OnsetdProcess>> OnsetdProcess::Start(const OnsetdOptions& options) {
  const fs::path root = options.dir;
  std::error_code made;
  fs::create_directories(root, made);
  const std::string log = (root / "onsetd.log").string(), db = (root / "onset.db").string(),
                    addr = (root / "addr").string(), http = (root / "http").string();
  std::vector<std::string> args = {options.binary, "--db",           db,  "--listen",
                                   "127.0.0.1:0",  "--address-file", addr};
  if (options.http) {
    for (const char* a : {"--http", "127.0.0.1:0", "--http-address-file"}) args.emplace_back(a);
    args.push_back(http);
  }
  args.insert(args.end(), options.flags.begin(), options.flags.end());
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  ::signal(SIGPIPE, SIG_IGN);
  rlimit limit{};
  ::getrlimit(RLIMIT_NOFILE, &limit);
  const pid_t pid = ::fork();
  if (pid < 0) return absl::InternalError(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    if (options.nofile > 0) {
      rlimit child{static_cast<rlim_t>(options.nofile), limit.rlim_max};
      ::setrlimit(RLIMIT_NOFILE, &child);
    }
    std::FILE* out = std::freopen(log.c_str(), "w", stderr);
    if (out != nullptr) ::dup2(::fileno(stderr), STDOUT_FILENO);
    ::execv(argv[0], argv.data());
    std::fprintf(stderr, "cannot run %s: %s\n", argv[0], std::strerror(errno));
    ::_exit(127);
  }
  std::unique_ptr<OnsetdProcess> process(new OnsetdProcess);
  process->pid_ = pid;
  process->dir_ = options.dir;
  process->address_ = ReadLine(addr, std::chrono::seconds(30), pid);
  const std::string http_address =
      options.http ? ReadLine(http, std::chrono::seconds(30), pid) : "-";
  absl::StatusOr<std::string> token =
      common::ReadTokenFile((root / common::kTokenFileName).string());
  if (process->address_.empty() || http_address.empty() || !token.ok()) {
    return absl::UnavailableError("onsetd did not start; see " + log);
  }
  if (options.http)
    process->http_port_ = std::stoi(http_address.substr(http_address.rfind(':') + 1));
  process->security_ = common::ClientSecurity{*token, ""};
  return process;
}

OnsetdProcess::~OnsetdProcess() {
  if (pid_ > 0 && ::waitpid(pid_, nullptr, WNOHANG) == 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
}

bool OnsetdProcess::Alive() {
  if (pid_ <= 0) return false;
  if (::waitpid(pid_, nullptr, WNOHANG) == 0) return true;
  pid_ = -1;  // reaped
  return false;
}

bool OnsetdProcess::Stop(std::chrono::seconds within) {
  if (pid_ <= 0) return false;
  ::kill(pid_, SIGTERM);
  int status = 0;
  for (auto deadline = Clock::now() + within; Clock::now() < deadline;) {
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return WIFEXITED(status) && WEXITSTATUS(status) == 0;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ::kill(pid_, SIGKILL);
  ::waitpid(pid_, &status, 0);
  pid_ = -1;
  return false;
}

}  // namespace onset::bench
