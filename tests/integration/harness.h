// Shared by the integration tests: locating the built binaries, starting them as children with
// their stdout collected, and reading the coordinator's database directly.
#pragma once

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/types.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/auth_token.h"
#include "worker/process_launcher.h"

namespace onset::testing {

namespace fs = std::filesystem;
using worker::PosixProcessLauncher;
using worker::Process;
using worker::SpawnOptions;

inline std::string BinDir() {
  const char* dir = std::getenv("ONSET_BIN_DIR");
  return dir == nullptr ? "" : dir;
}

inline bool HaveBinaries(const std::vector<std::string>& names, std::string* missing) {
  for (const std::string& name : names) {
    fs::path path = fs::path(BinDir()) / name;
    if (!fs::exists(path)) {
      *missing = path.string();
      return false;
    }
  }
  return true;
}

// A child whose stdout is collected.
struct Child {
  std::unique_ptr<Process> process;
  std::shared_ptr<std::string> out = std::make_shared<std::string>();
  std::shared_ptr<std::mutex> mu = std::make_shared<std::mutex>();
  std::string Out() const {
    std::lock_guard<std::mutex> lock(*mu);
    return *out;
  }
};

// Starts `binary` of BinDir() with `args`, in `working_dir` (empty: this one), with `env` on top
// of this process's environment.
inline Child Start(PosixProcessLauncher& launcher, const std::string& binary,
                   std::vector<std::string> args, const std::string& working_dir = "",
                   std::map<std::string, std::string> env = {}) {
  Child child;
  SpawnOptions options;
  options.program = (fs::path(BinDir()) / binary).string();
  options.args = std::move(args);
  options.working_dir = working_dir;
  options.env = std::move(env);
  options.stderr_tail_lines = 200;
  options.stderr_tail_bytes = 32768;
  options.on_stdout_line = [out = child.out, mu = child.mu](std::string line) {
    std::lock_guard<std::mutex> lock(*mu);
    *out += line + "\n";
  };
  auto spawned = launcher.Spawn(std::move(options));
  EXPECT_TRUE(spawned.ok()) << spawned.status();
  if (spawned.ok()) child.process = std::move(*spawned);
  return child;
}

inline std::string WaitForFile(const fs::path& path) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < deadline) {
    std::ifstream in(path);
    std::string line;
    if (in && std::getline(in, line) && !line.empty()) return line;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return "";
}

// How a child ended: its exit code (128 + the signal when killed; -1 when it never started), its
// stdout and the tail of its stderr.
struct Ran {
  int code = -1;
  std::string out;
  std::string err;
};

// Waits up to `timeout` for `child` to exit (past it: a test failure, and the child is
// terminated) and returns how it ended.
inline Ran Finish(Child& child, std::chrono::milliseconds timeout) {
  Ran ran;
  if (!child.process) return ran;
  if (!child.process->WaitFor(timeout)) {
    ADD_FAILURE() << "did not exit:\n" << child.process->StderrTail();
    child.process->Terminate(std::chrono::seconds(5));
  }
  const worker::ExitStatus status = child.process->Wait();
  ran.code = status.Exited() ? status.exit_code : 128 + status.signal;
  ran.out = child.Out();
  ran.err = child.process->StderrTail();
  return ran;
}

// An onsetd on a free loopback port with its database, token and address files in `dir`.
struct Daemon {
  Child child;
  std::string address;     // host:port of the gRPC API
  std::string token_file;  // onsetd.token, made on its first start
  std::string token;
};

// Starts onsetd (--db DIR/onset.db --listen 127.0.0.1:0 plus `extra` flags) and waits for its
// address and token; a failure fails the test and leaves `address` or `token` empty.
inline Daemon StartDaemon(PosixProcessLauncher& launcher, const fs::path& dir,
                          std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {"--db",           (dir / "onset.db").string(),
                                   "--listen",       "127.0.0.1:0",
                                   "--address-file", (dir / "addr").string()};
  args.insert(args.end(), extra.begin(), extra.end());
  Daemon d;
  d.child = Start(launcher, "onsetd", args);
  if (!d.child.process) return d;
  d.address = WaitForFile(dir / "addr");
  EXPECT_FALSE(d.address.empty()) << "onsetd wrote no address:\n" << d.child.process->StderrTail();
  d.token_file = (dir / common::kTokenFileName).string();
  absl::StatusOr<std::string> token = common::ReadTokenFile(d.token_file);
  EXPECT_TRUE(token.ok()) << token.status();
  if (token.ok()) d.token = *token;
  return d;
}

// Runs `sql` read-only on the database at `db` with `binds` as its text parameters and calls
// `row` for every result row. A database or query error fails the test.
inline void ForEachRow(const fs::path& db, const std::string& sql,
                       const std::vector<std::string>& binds,
                       const std::function<void(sqlite3_stmt*)>& row) {
  sqlite3* conn = nullptr;
  if (sqlite3_open_v2(db.c_str(), &conn, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    ADD_FAILURE() << "cannot open " << db << ": " << sqlite3_errmsg(conn);
    sqlite3_close(conn);
    return;
  }
  sqlite3_busy_timeout(conn, 5000);
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v2(conn, sql.c_str(), -1, &stmt, nullptr) != SQLITE_OK) {
    ADD_FAILURE() << "query: " << sqlite3_errmsg(conn) << ": " << sql;
  } else {
    for (size_t i = 0; i < binds.size(); ++i) {
      sqlite3_bind_text(stmt, static_cast<int>(i) + 1, binds[i].c_str(), -1, SQLITE_TRANSIENT);
    }
    while (sqlite3_step(stmt) == SQLITE_ROW) row(stmt);
  }
  sqlite3_finalize(stmt);
  sqlite3_close(conn);
}

// Column `col` of the current row as text ("" for NULL).
inline std::string Text(sqlite3_stmt* stmt, int col) {
  const unsigned char* t = sqlite3_column_text(stmt, col);
  return t ? std::string(reinterpret_cast<const char*>(t)) : std::string();
}

// The arguments of each onset-train process whose command line mentions `dir` (tests running
// in parallel train the same cells), by pid.
inline std::vector<std::pair<pid_t, std::vector<std::string>>> TrainersUnder(
    const std::string& dir) {
  std::vector<std::pair<pid_t, std::vector<std::string>>> trainers;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(entry.path() / "cmdline", std::ios::binary);
    std::stringstream cmdline;
    cmdline << in.rdbuf();
    const std::string text = cmdline.str();
    if (text.find("onset-train") == std::string::npos || text.find(dir) == std::string::npos) {
      continue;
    }
    std::vector<std::string> args;
    std::stringstream split(text);
    for (std::string arg; std::getline(split, arg, '\0');) args.push_back(arg);
    trainers.emplace_back(static_cast<pid_t>(std::stoi(name)), std::move(args));
  }
  return trainers;
}

// The pids of onset-train processes whose command line mentions both `dir` and `needle`.
inline std::vector<pid_t> TrainersMatching(const std::string& dir, const std::string& needle) {
  std::vector<pid_t> pids;
  for (const auto& [pid, args] : TrainersUnder(dir)) {
    for (const std::string& arg : args) {
      if (arg.find(needle) != std::string::npos) {
        pids.push_back(pid);
        break;
      }
    }
  }
  return pids;
}

// The pids of the trainers of `cell` (its hash): those that write into its directory. A branch
// that resumes its trunk's checkpoint names the trunk too, but writes elsewhere.
inline std::vector<pid_t> TrainersOfCell(const std::string& dir, const std::string& cell) {
  std::vector<pid_t> pids;
  for (const auto& [pid, args] : TrainersUnder(dir)) {
    for (size_t i = 0; i + 1 < args.size(); ++i) {
      if (args[i] == "--checkpoint-dir" &&
          args[i + 1].find("/" + cell + "/") != std::string::npos) {
        pids.push_back(pid);
        break;
      }
    }
  }
  return pids;
}

// The token counts at which `cell` (its hash) resumed from a checkpoint: the trainer's
// train/resumed_at_tokens points, in order.
inline std::vector<int64_t> ResumedAt(const fs::path& db, const std::string& cell) {
  std::vector<int64_t> out;
  ForEachRow(db,
             "SELECT m.tokens FROM metrics m JOIN cells c ON c.id = m.cell_id "
             "WHERE c.hash = ? AND m.name = 'train/resumed_at_tokens' ORDER BY m.tokens",
             {cell}, [&](sqlite3_stmt* row) { out.push_back(sqlite3_column_int64(row, 0)); });
  return out;
}

// (cell hash) -> number of distinct token counts with a value of `metric`.
inline std::map<std::string, int> PointsPerCell(const fs::path& db, const std::string& metric) {
  std::map<std::string, int> counts;
  ForEachRow(db,
             "SELECT c.hash, COUNT(DISTINCT m.tokens) FROM metrics m JOIN cells c ON "
             "c.id = m.cell_id WHERE m.name = ? AND m.value IS NOT NULL GROUP BY c.hash",
             {metric},
             [&](sqlite3_stmt* row) { counts[Text(row, 0)] = sqlite3_column_int(row, 1); });
  return counts;
}

// A test against a real onsetd of its own: no client setting taken from the environment, a fresh
// directory DIR/`prefix`-PID (removed at the end unless the test failed), onsetd (started by the
// test with StartDaemon into daemon_) stopped at the end, and `onset` run against it.
class OnsetdTest : public ::testing::Test {
 protected:
  explicit OnsetdTest(std::string prefix) : prefix_(std::move(prefix)) {}

  void SetUp() override {
    for (const char* name : {"ONSET_COORDINATOR", "ONSET_TOKEN", "ONSET_TOKEN_FILE"}) {
      unsetenv(name);
    }
    dir_ = fs::temp_directory_path() / (prefix_ + "-" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    // A POST in flight to a webhook may take its 10 s timeout at shutdown.
    if (daemon_.child.process) daemon_.child.process->Terminate(std::chrono::seconds(30));
    if (!HasFailure()) fs::remove_all(dir_);
  }

  // `onset ARGS` against daemon_, within 60 s.
  Ran Onset(std::vector<std::string> args) {
    args.insert(args.begin(),
                {"--coordinator", daemon_.address, "--token-file", daemon_.token_file});
    Child child = Start(launcher_, "onset", std::move(args));
    return Finish(child, std::chrono::seconds(60));
  }

  const std::string prefix_;
  fs::path dir_;
  PosixProcessLauncher launcher_;
  Daemon daemon_;
};

}  // namespace onset::testing
