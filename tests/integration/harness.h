// Shared by the integration tests: locating the built binaries, starting them as children with
// their stdout collected, and reading the coordinator's database directly.
#pragma once

#include <sqlite3.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

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

inline Child Start(PosixProcessLauncher& launcher, const std::string& binary,
            std::vector<std::string> args, const std::string& working_dir = "") {
  Child child;
  SpawnOptions options;
  options.program = (fs::path(BinDir()) / binary).string();
  options.args = std::move(args);
  options.working_dir = working_dir;
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

// (cell hash) -> number of distinct token counts with a value of `metric`.
inline std::map<std::string, int> PointsPerCell(const fs::path& db, const std::string& metric) {
  std::map<std::string, int> counts;
  sqlite3* conn = nullptr;
  if (sqlite3_open_v2(db.c_str(), &conn, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    ADD_FAILURE() << "cannot open " << db << ": " << sqlite3_errmsg(conn);
    sqlite3_close(conn);
    return counts;
  }
  sqlite3_busy_timeout(conn, 5000);
  sqlite3_stmt* stmt = nullptr;
  const char* sql =
      "SELECT c.hash, COUNT(DISTINCT m.tokens) FROM metrics m JOIN cells c ON c.id = m.cell_id "
      "WHERE m.name = ? AND m.value IS NOT NULL GROUP BY c.hash";
  if (sqlite3_prepare_v2(conn, sql, -1, &stmt, nullptr) != SQLITE_OK) {
    ADD_FAILURE() << "query: " << sqlite3_errmsg(conn);
  } else {
    sqlite3_bind_text(stmt, 1, metric.c_str(), -1, SQLITE_TRANSIENT);
    while (sqlite3_step(stmt) == SQLITE_ROW) {
      counts[reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0))] =
          sqlite3_column_int(stmt, 1);
    }
  }
  sqlite3_finalize(stmt);
  sqlite3_close(conn);
  return counts;
}

}  // namespace onset::testing
