#include "worker/process_launcher.h"

#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/log_line.h"
#include "common/utf8.h"

namespace onset::worker {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;

SpawnOptions Shell(const std::string& script) {
  SpawnOptions options;
  options.program = "/bin/sh";
  options.args = {"-c", script};
  return options;
}

// Collects stdout lines from the reader thread.
struct Lines {
  std::mutex mu;
  std::vector<std::string> lines;
  void Attach(SpawnOptions* options) {
    options->on_stdout_line = [this](std::string line) {
      std::lock_guard<std::mutex> lock(mu);
      lines.push_back(std::move(line));
    };
  }
};

// True once `pid` is gone or a zombie waiting for a reaper that is not us.
bool ProcessGone(int pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  if (!stat) return true;
  std::string content;
  std::getline(stat, content);
  size_t paren = content.rfind(')');
  return paren != std::string::npos && paren + 2 < content.size() && content[paren + 2] == 'Z';
}

TEST(ProcessLauncherTest, ReportsExitCode) {
  PosixProcessLauncher launcher;
  auto process = launcher.Spawn(Shell("exit 7"));
  ASSERT_TRUE(process.ok()) << process.status();
  ExitStatus status = (*process)->Wait();
  EXPECT_TRUE(status.Exited());
  EXPECT_EQ(status.exit_code, 7);
  EXPECT_EQ(status.signal, 0);
  EXPECT_EQ(status.ToString(), "exit code 7");
}

TEST(ProcessLauncherTest, ReportsKillingSignal) {
  PosixProcessLauncher launcher;
  auto process = launcher.Spawn(Shell("kill -9 $$"));
  ASSERT_TRUE(process.ok()) << process.status();
  ExitStatus status = (*process)->Wait();
  EXPECT_FALSE(status.Exited());
  EXPECT_EQ(status.signal, SIGKILL);
  EXPECT_EQ(status.ToString(), "killed by signal 9 (SIGKILL)");
}

TEST(ProcessLauncherTest, DeliversStdoutLinesInOrderBeforeExit) {
  PosixProcessLauncher launcher;
  SpawnOptions options = Shell("echo one; echo two; printf three");
  Lines lines;
  lines.Attach(&options);
  std::promise<size_t> lines_at_exit;
  options.on_exit = [&](const ExitStatus&) {
    std::lock_guard<std::mutex> lock(lines.mu);
    lines_at_exit.set_value(lines.lines.size());
  };
  auto process = launcher.Spawn(std::move(options));
  ASSERT_TRUE(process.ok()) << process.status();
  EXPECT_TRUE((*process)->Wait().Succeeded());
  EXPECT_EQ(lines_at_exit.get_future().get(), 3u);
  EXPECT_THAT(lines.lines, ElementsAre("one", "two", "three"));
}

TEST(ProcessLauncherTest, PassesEnvironmentAndWorkingDirectory) {
  PosixProcessLauncher launcher;
  SpawnOptions options = Shell("echo \"$ONSET_TEST_VALUE\"; pwd");
  options.env["ONSET_TEST_VALUE"] = "forty two";
  options.working_dir = std::filesystem::temp_directory_path().string();
  Lines lines;
  lines.Attach(&options);
  auto process = launcher.Spawn(std::move(options));
  ASSERT_TRUE(process.ok()) << process.status();
  EXPECT_TRUE((*process)->Wait().Succeeded());
  EXPECT_THAT(
      lines.lines,
      ElementsAre("forty two",
                  std::filesystem::canonical(std::filesystem::temp_directory_path()).string()));
}

TEST(ProcessLauncherTest, LeavesOutTheNamesToUnset) {
  ::setenv("ONSET_TEST_SECRET", "the worker's", 1);
  PosixProcessLauncher launcher;
  SpawnOptions options = Shell("echo \"[${ONSET_TEST_SECRET-unset}]\"");
  options.unset_env = {"ONSET_TEST_SECRET"};
  Lines lines;
  lines.Attach(&options);
  auto process = launcher.Spawn(std::move(options));
  ::unsetenv("ONSET_TEST_SECRET");
  ASSERT_TRUE(process.ok()) << process.status();
  EXPECT_TRUE((*process)->Wait().Succeeded());
  EXPECT_THAT(lines.lines, ElementsAre("[unset]"));
}

TEST(ProcessLauncherTest, StderrTailKeepsTheLastLines) {
  PosixProcessLauncher launcher;
  SpawnOptions options =
      Shell("i=0; while [ $i -lt 500 ]; do echo \"line $i\" >&2; i=$((i+1)); done; exit 1");
  options.stderr_tail_lines = 50;
  auto process = launcher.Spawn(std::move(options));
  ASSERT_TRUE(process.ok()) << process.status();
  EXPECT_EQ((*process)->Wait().exit_code, 1);
  std::string tail = (*process)->StderrTail();
  EXPECT_THAT(tail, StartsWith("line 450\n"));
  EXPECT_EQ(tail.substr(tail.size() - 8), "line 499");
  EXPECT_EQ(std::count(tail.begin(), tail.end(), '\n'), 49);
}

TEST(ProcessLauncherTest, StderrTailIsBoundedInBytes) {
  PosixProcessLauncher launcher;
  SpawnOptions options = Shell(
      "i=0; while [ $i -lt 100 ]; do echo \"a rather long stderr line number $i\" >&2; "
      "i=$((i+1)); done");
  options.stderr_tail_bytes = 200;
  auto process = launcher.Spawn(std::move(options));
  ASSERT_TRUE(process.ok()) << process.status();
  (*process)->Wait();
  std::string tail = (*process)->StderrTail();
  EXPECT_LE(tail.size(), 200u);
  EXPECT_THAT(tail, HasSubstr("number 99"));
}

// Collects stderr lines from the reader thread.
struct StderrLines {
  std::mutex mu;
  std::vector<std::string> lines;
  void Attach(SpawnOptions* options) {
    options->on_stderr_line = [this](const std::string& line) {
      std::lock_guard<std::mutex> lock(mu);
      lines.push_back(line);
    };
  }
};

TEST(ProcessLauncherTest, StderrLinesAreValidUtf8WhateverTheTrainerWrote) {
  PosixProcessLauncher launcher;
  SpawnOptions options = Shell("printf 'bad \\377 byte\\n' >&2; printf 'cut \\342\\202' >&2");
  StderrLines lines;
  lines.Attach(&options);
  auto process = launcher.Spawn(std::move(options));
  ASSERT_TRUE(process.ok()) << process.status();
  (*process)->Wait();
  EXPECT_THAT(lines.lines, ElementsAre("bad \xEF\xBF\xBD byte", "cut \xEF\xBF\xBD"));
  EXPECT_EQ((*process)->StderrTail(), "bad \xEF\xBF\xBD byte\ncut \xEF\xBF\xBD");
}

TEST(ProcessLauncherTest, AHugeStderrLineIsCutAsItIsReadAndTheNextLinesFollow) {
  PosixProcessLauncher launcher;
  // 5 MB without a newline, then two short lines: one protobuf message could not carry it.
  SpawnOptions options = Shell(
      "head -c 5000000 /dev/zero | tr '\\0' x >&2; echo >&2; echo next >&2; printf 'last' >&2");
  StderrLines lines;
  lines.Attach(&options);
  auto process = launcher.Spawn(std::move(options));
  ASSERT_TRUE(process.ok()) << process.status();
  (*process)->Wait();
  ASSERT_EQ(lines.lines.size(), 3u);
  EXPECT_LE(lines.lines[0].size(), common::kMaxLogLineBytes);
  EXPECT_THAT(lines.lines[0], StartsWith("xxxxxxxx"));
  EXPECT_THAT(lines.lines[0], ::testing::EndsWith(" [... cut: the line had 5000000 bytes]"));
  EXPECT_EQ(lines.lines[1], "next");
  EXPECT_EQ(lines.lines[2], "last");
}

TEST(ProcessLauncherTest, ALongStderrLineIsCutBetweenCharacters) {
  PosixProcessLauncher launcher;
  // 3000 euro signs (3 bytes each): a byte bound falls inside one unless the cut backs off.
  SpawnOptions options =
      Shell("i=0; while [ $i -lt 3000 ]; do printf '\\342\\202\\254' >&2; i=$((i+1)); done");
  options.stderr_max_line_bytes = 1000;
  options.stderr_tail_bytes = 500;  // the tail keeps the end of the line, from a character on
  StderrLines lines;
  lines.Attach(&options);
  auto process = launcher.Spawn(std::move(options));
  ASSERT_TRUE(process.ok()) << process.status();
  (*process)->Wait();
  ASSERT_EQ(lines.lines.size(), 1u);
  const std::string& line = lines.lines[0];
  EXPECT_LE(line.size(), 1000u);
  EXPECT_TRUE(common::IsValidUtf8(line));
  EXPECT_THAT(line, ::testing::EndsWith("\xE2\x82\xAC [... cut: the line had 9000 bytes]"));
  EXPECT_LE((*process)->StderrTail().size(), 500u);
  EXPECT_TRUE(common::IsValidUtf8((*process)->StderrTail()));
}

TEST(ProcessLauncherTest, AnOverlongStdoutLineArrivesAsItsFirstBytes) {
  PosixProcessLauncher launcher;
  SpawnOptions options = Shell("head -c 100000 /dev/zero | tr '\\0' y; echo; echo after");
  options.stdout_max_line_bytes = 1000;
  Lines lines;
  lines.Attach(&options);
  auto process = launcher.Spawn(std::move(options));
  ASSERT_TRUE(process.ok()) << process.status();
  (*process)->Wait();
  EXPECT_THAT(lines.lines, ElementsAre(std::string(1000, 'y'), "after"));
}

TEST(ProcessLauncherTest, TerminateKillsTheWholeGroup) {
  PosixProcessLauncher launcher;
  SpawnOptions options = Shell("sleep 1000 & echo $!; wait");
  std::promise<int> child_pid;
  options.on_stdout_line = [&](std::string line) { child_pid.set_value(std::stoi(line)); };
  auto process = launcher.Spawn(std::move(options));
  ASSERT_TRUE(process.ok()) << process.status();
  int grandchild = child_pid.get_future().get();
  ASSERT_FALSE(ProcessGone(grandchild));

  ExitStatus status = (*process)->Terminate(std::chrono::seconds(5));
  EXPECT_EQ(status.signal, SIGTERM);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!ProcessGone(grandchild) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(ProcessGone(grandchild)) << "pid " << grandchild;
}

TEST(ProcessLauncherTest, TerminateEscalatesToSigkillAfterGrace) {
  PosixProcessLauncher launcher;
  SpawnOptions options = Shell("trap '' TERM; echo ready; while :; do sleep 0.05; done");
  std::promise<void> ready;
  options.on_stdout_line = [&](std::string) { ready.set_value(); };
  auto process = launcher.Spawn(std::move(options));
  ASSERT_TRUE(process.ok()) << process.status();
  ready.get_future().wait();
  auto start = std::chrono::steady_clock::now();
  ExitStatus status = (*process)->Terminate(std::chrono::milliseconds(300));
  EXPECT_EQ(status.signal, SIGKILL);
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(300));
}

TEST(ProcessLauncherTest, MissingProgramIsNotFound) {
  PosixProcessLauncher launcher;
  SpawnOptions options;
  options.program = "/nonexistent/onset-train";
  auto process = launcher.Spawn(std::move(options));
  ASSERT_FALSE(process.ok());
  EXPECT_EQ(process.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(process.status().message()), HasSubstr("/nonexistent/onset-train"));
}

}  // namespace
}  // namespace onset::worker
