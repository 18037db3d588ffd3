// Spawn, ChildEnvironment and ExitStatus: the child gets the argv, environment, directory,
// descriptors and process group asked for, and its ending is named one way.
#include "base/process.h"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <string>

namespace onset::process {
namespace {

// Runs `script` with sh, its stdout into a pipe; returns what it printed and how it ended.
std::pair<std::string, ExitStatus> RunShell(const std::string& script, SpawnSpec spec = {}) {
  int fds[2];
  EXPECT_EQ(pipe2(fds, O_CLOEXEC), 0);
  spec.argv = {"/bin/sh", "-c", script};
  if (spec.env.empty()) spec.env = ChildEnvironment();
  spec.stdout_fd = fds[1];
  int error = 0;
  const pid_t pid = Spawn(spec, &error);
  close(fds[1]);
  EXPECT_GT(pid, 0) << error;
  std::string out;
  char buffer[256];
  ssize_t n;
  while ((n = read(fds[0], buffer, sizeof buffer)) > 0) out.append(buffer, n);
  close(fds[0]);
  return {out, WaitFor(pid)};
}

TEST(ExitStatusTest, NamesAnExitAndASignalOneWay) {
  EXPECT_EQ((ExitStatus{3, 0}).ToString(), "exit code 3");
  EXPECT_EQ((ExitStatus{0, 9}).ToString(), "killed by signal 9 (SIGKILL)");
  EXPECT_EQ((ExitStatus{0, 15}).ToString(), "killed by signal 15 (SIGTERM)");
  EXPECT_TRUE((ExitStatus{0, 0}).Succeeded());
  EXPECT_FALSE((ExitStatus{0, 9}).Exited());
}

TEST(ExitStatusTest, ReadsWhatWaitpidWrote) {
  const ExitStatus status = RunShell("exit 7").second;
  EXPECT_EQ(status.exit_code, 7);
  EXPECT_TRUE(status.Exited());
  const ExitStatus killed = RunShell("kill -TERM $$").second;
  EXPECT_EQ(killed.signal, SIGTERM);
  EXPECT_FALSE(killed.Succeeded());
}

TEST(ChildEnvironmentTest, SetReplacesUnsetRemovesTheRestIsInherited) {
  ASSERT_EQ(setenv("ONSET_PROCESS_TEST_KEEP", "kept", 1), 0);
  ASSERT_EQ(setenv("ONSET_PROCESS_TEST_SET", "old", 1), 0);
  ASSERT_EQ(setenv("ONSET_PROCESS_TEST_UNSET", "gone", 1), 0);
  const std::vector<std::string> env =
      ChildEnvironment({{"ONSET_PROCESS_TEST_SET", "new"}}, {"ONSET_PROCESS_TEST_UNSET"});
  auto has = [&](const std::string& entry) { return std::count(env.begin(), env.end(), entry); };
  EXPECT_EQ(has("ONSET_PROCESS_TEST_KEEP=kept"), 1);
  EXPECT_EQ(has("ONSET_PROCESS_TEST_SET=new"), 1);
  EXPECT_EQ(has("ONSET_PROCESS_TEST_SET=old"), 0);
  EXPECT_EQ(has("ONSET_PROCESS_TEST_UNSET=gone"), 0);
  unsetenv("ONSET_PROCESS_TEST_KEEP");
  unsetenv("ONSET_PROCESS_TEST_SET");
  unsetenv("ONSET_PROCESS_TEST_UNSET");
}

TEST(SpawnTest, TheChildGetsItsEnvironmentDirectoryAndStdin) {
  SpawnSpec spec;
  spec.env = {"ONSET_ONLY=this"};
  spec.working_dir = "/";
  auto [out, status] = RunShell("echo \"$ONSET_ONLY ${HOME-nohome} $(pwd) $(cat | wc -c)\"", spec);
  EXPECT_EQ(out, "this nohome / 0\n");  // stdin is /dev/null
  EXPECT_TRUE(status.Succeeded());
}

TEST(SpawnTest, AnOwnProcessGroupOrThisOne) {
  // Field 5 of /proc/PID/stat is the process group.
  const std::string script = "echo $$ $(cut -d' ' -f5 /proc/$$/stat)";
  const std::string leader = RunShell(script).first;
  const std::string pid = leader.substr(0, leader.find(' '));
  EXPECT_EQ(leader, pid + " " + pid + "\n");  // leads its own group
  SpawnSpec shared;
  shared.own_process_group = false;
  const std::string member = RunShell(script, shared).first;
  EXPECT_EQ(member.substr(member.find(' ') + 1), std::to_string(getpgrp()) + "\n");
}

TEST(SpawnTest, AMissingProgramIsAnErrno) {
  SpawnSpec spec;
  spec.argv = {"/nonexistent/onset-no-such-program"};
  int error = 0;
  EXPECT_EQ(Spawn(spec, &error), -1);
  EXPECT_EQ(error, ENOENT);
  spec.argv = {"onset-no-such-program-on-path"};
  spec.search_path = true;
  error = 0;
  EXPECT_EQ(Spawn(spec, &error), -1);
  EXPECT_EQ(error, ENOENT);
  spec.argv.clear();
  EXPECT_EQ(Spawn(spec, &error), -1);
  EXPECT_EQ(error, EINVAL);
}

TEST(SpawnTest, SearchesThePathWhenAsked) {
  SpawnSpec spec;
  spec.argv = {"true"};
  spec.search_path = true;
  spec.env = ChildEnvironment();
  int error = 0;
  const pid_t pid = Spawn(spec, &error);
  ASSERT_GT(pid, 0) << error;
  EXPECT_TRUE(WaitFor(pid).Succeeded());
}

TEST(SpawnTest, BlockedSignalsAreNotInherited) {
  sigset_t term, previous;
  sigemptyset(&term);
  sigaddset(&term, SIGTERM);
  ASSERT_EQ(pthread_sigmask(SIG_BLOCK, &term, &previous), 0);
  const ExitStatus status = RunShell("kill -TERM $$; sleep 5").second;
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  EXPECT_EQ(status.signal, SIGTERM);
}

}  // namespace
}  // namespace onset::process
