// Running a short-lived command and keeping what it prints, e.g. `sbatch`: no shell, a bounded
// capture of its stdout and stderr, and a time limit after which it is killed.
#pragma once

#include <chrono>
#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "base/process.h"

namespace onset::cli {

struct CapturedRun {
  process::ExitStatus status;  // how it ended; status.ToString() says it for a person
  std::string out;             // the first max_output_bytes of its stdout
  std::string err;             // the first max_output_bytes of its stderr

  bool Succeeded() const { return status.Succeeded(); }
};

struct CaptureOptions {
  std::vector<std::string> argv;  // argv[0] is looked up on PATH when it holds no '/'
  // Its environment: this process's, without `unset`, with `set` on top.
  std::map<std::string, std::string> set;
  std::vector<std::string> unset;
  std::chrono::milliseconds timeout{60000};
  size_t max_output_bytes = 64 * 1024;  // of each stream; the rest is read and dropped
};

// Runs the command (base/process.h: Spawn) with stdin from /dev/null, in its own process group,
// and waits for it.
// Errors: NotFound or PermissionDenied when it cannot be started, DeadlineExceeded when it is
// still running after the timeout (its process group is then killed), each naming the program.
absl::StatusOr<CapturedRun> RunCaptured(const CaptureOptions& options);

}  // namespace onset::cli
