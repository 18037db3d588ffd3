// A real single-node Slurm cluster for a test: tests/slurm/cluster.sh starts Debian's munged,
// slurmctld and slurmd on loopback with everything in one directory; this runs Slurm's commands
// against it and stops it (its jobs first) when destroyed. Any test may hold one; the CTest
// label `slurm` and its resource lock keep two from starting at once.
#pragma once

#include <gtest/gtest.h>

#include <errno.h>
#include <stdlib.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "tests/integration/harness.h"
#include "worker/process_launcher.h"

namespace onset::testing {

namespace slurm_fs = std::filesystem;

// A job as the job-completion log recorded it when it ended ("JobId=12 ... JobState=COMPLETED").
struct EndedJob {
  std::string id;         // JobId: an array element has its own id
  std::string name;       // Name
  std::string state;      // JobState: COMPLETED, FAILED, CANCELLED, TIMEOUT, ...
  std::string exit_code;  // ExitCode, "status:signal"
};

class SlurmCluster {
 public:
  // Starts a cluster in a new directory /tmp/onset-slurm-XXXXXX (short: Slurm's and munge's
  // Unix sockets live in it), removed when the cluster stops unless the test failed. Returns
  // nullptr and sets `*skip_reason` when Slurm cannot start on this machine (cluster.sh said
  // why); returns nullptr after a test failure, with the daemons' logs, when it should have
  // started and did not.
  static std::unique_ptr<SlurmCluster> Start(std::string* skip_reason) {
    char dir[] = "/tmp/onset-slurm-XXXXXX";
    if (::mkdtemp(dir) == nullptr) {
      ADD_FAILURE() << "mkdtemp " << dir << ": " << std::strerror(errno);
      return nullptr;
    }
    std::unique_ptr<SlurmCluster> cluster(new SlurmCluster(dir));
    const Ran ran = cluster->Script("start", std::chrono::minutes(5));
    if (ran.code == 77) {
      *skip_reason = ran.err;
      cluster->started_ = false;
      return nullptr;
    }
    if (ran.code != 0 || ran.out.find("SLURM_CONF=") == std::string::npos) {
      ADD_FAILURE() << "tests/slurm/cluster.sh start " << dir << " exited " << ran.code << ":\n"
                    << ran.err;
      cluster->started_ = false;
      return nullptr;
    }
    return cluster;
  }

  ~SlurmCluster() {
    if (started_) {
      const Ran ran = Script("stop", std::chrono::minutes(2));
      EXPECT_EQ(ran.code, 0) << "tests/slurm/cluster.sh stop: " << ran.err;
    }
    std::error_code ec;
    if (!::testing::Test::HasFailure()) slurm_fs::remove_all(dir_, ec);
  }

  SlurmCluster(const SlurmCluster&) = delete;
  SlurmCluster& operator=(const SlurmCluster&) = delete;

  std::string conf() const { return (dir_ / "slurm.conf").string(); }
  const slurm_fs::path& dir() const { return dir_; }

  // Runs a Slurm command (sbatch, squeue, scancel, scontrol, sinfo) from PATH against this
  // cluster, with `env` on top of this process's environment, and waits for it (a minute at
  // most).
  Ran Command(const std::string& name, std::vector<std::string> args,
              std::map<std::string, std::string> env = {}) {
    env["SLURM_CONF"] = conf();
    return Run(OnPath(name), std::move(args), std::move(env), std::chrono::minutes(1));
  }

  // sbatch --parsable ARGS: the job id ("12"), or "" after a test failure saying why.
  std::string Sbatch(std::vector<std::string> args, std::map<std::string, std::string> env = {}) {
    args.insert(args.begin(), "--parsable");
    const Ran ran = Command("sbatch", std::move(args), std::move(env));
    if (ran.code != 0) {
      ADD_FAILURE() << "sbatch exited " << ran.code << ": " << ran.err;
      return "";
    }
    std::string id = ran.out.substr(0, ran.out.find_first_of(";\n"));
    if (id.empty()) ADD_FAILURE() << "sbatch printed no job id: " << ran.out;
    return id;
  }

  // The jobs in the queue: their ids as squeue prints them ("12", or "11_0" for an array
  // element) -> their states (PENDING, RUNNING, COMPLETING, ...). Empty when it is empty.
  std::map<std::string, std::string> Queue() {
    const Ran ran = Command("squeue", {"--noheader", "--array", "--format=%i %T"});
    EXPECT_EQ(ran.code, 0) << "squeue: " << ran.err;
    std::map<std::string, std::string> jobs;
    for (absl::string_view line : absl::StrSplit(ran.out, '\n', absl::SkipEmpty())) {
      std::vector<std::string> parts = absl::StrSplit(line, ' ', absl::SkipEmpty());
      if (parts.size() == 2) jobs[parts[0]] = parts[1];
    }
    return jobs;
  }

  // Every job that has ended, in the order they ended (the job-completion log).
  std::vector<EndedJob> Ended() const {
    std::vector<EndedJob> jobs;
    std::ifstream in(dir_ / "jobcomp.log");
    std::string line;
    while (std::getline(in, line)) {
      EndedJob job;
      for (absl::string_view field : absl::StrSplit(line, ' ', absl::SkipEmpty())) {
        const size_t eq = field.find('=');
        if (eq == absl::string_view::npos) continue;
        const absl::string_view key = field.substr(0, eq), value = field.substr(eq + 1);
        if (key == "JobId") job.id = std::string(value);
        if (key == "Name") job.name = std::string(value);
        if (key == "JobState") job.state = std::string(value);
        if (key == "ExitCode") job.exit_code = std::string(value);
      }
      jobs.push_back(job);
    }
    return jobs;
  }

  // `scontrol show job ID`: "Key=Value" pairs of the job (or of every element of an array).
  std::string ShowJob(const std::string& id) {
    const Ran ran = Command("scontrol", {"show", "job", id});
    return ran.out + ran.err;
  }

 private:
  explicit SlurmCluster(slurm_fs::path dir) : dir_(std::move(dir)) {}

  Ran Script(const std::string& command, std::chrono::milliseconds timeout) {
    return Run(std::string(ONSET_SOURCE_DIR) + "/tests/slurm/cluster.sh", {command, dir_.string()},
               {}, timeout);
  }

  static std::string OnPath(const std::string& name) {
    const char* path = std::getenv("PATH");
    for (absl::string_view dir :
         absl::StrSplit(path != nullptr ? path : "/usr/bin:/bin", ':', absl::SkipEmpty())) {
      slurm_fs::path candidate = slurm_fs::path(std::string(dir)) / name;
      if (::access(candidate.c_str(), X_OK) == 0) return candidate.string();
    }
    return name;  // the spawn then fails, naming it
  }

  Ran Run(const std::string& program, std::vector<std::string> args,
          std::map<std::string, std::string> env, std::chrono::milliseconds timeout) {
    Ran ran;
    worker::SpawnOptions options;
    options.program = program;
    options.args = std::move(args);
    options.env = std::move(env);
    options.stderr_tail_lines = 200;
    options.stderr_tail_bytes = 32768;
    auto out = std::make_shared<std::string>();
    auto mu = std::make_shared<std::mutex>();
    options.on_stdout_line = [out, mu](std::string line) {
      std::lock_guard<std::mutex> lock(*mu);
      *out += line + "\n";
    };
    absl::StatusOr<std::unique_ptr<worker::Process>> process = launcher_.Spawn(std::move(options));
    if (!process.ok()) {
      ran.err = std::string(process.status().message());
      return ran;
    }
    if (!(*process)->WaitFor(timeout)) {
      ADD_FAILURE() << program << " did not exit within " << timeout.count() << " ms";
      (*process)->Terminate(std::chrono::seconds(5));
    }
    const worker::ExitStatus status = (*process)->Wait();
    ran.code = status.Exited() ? status.exit_code : 128 + status.signal;
    ran.err = (*process)->StderrTail();
    std::lock_guard<std::mutex> lock(*mu);
    ran.out = *out;
    return ran;
  }

  const slurm_fs::path dir_;
  bool started_ = true;
  worker::PosixProcessLauncher launcher_;
};

}  // namespace onset::testing
