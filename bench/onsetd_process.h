// A real onsetd as a child process of a benchmark, so that its own threads, descriptors and
// memory can be read from /proc while the benchmark loads it: started on a directory of its own,
// its address and token read back, stopped with SIGTERM (and a deadline).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/client_security.h"

namespace onset::bench {

struct OnsetdOptions {
  std::string binary;              // the onsetd to run
  std::string dir;                 // its database, address files and log (onsetd.log)
  std::vector<std::string> flags;  // beyond --db, --listen and --address-file
  bool http = false;               // also serve the dashboard on a free port
  int nofile = 0;                  // its open-file limit (0: this process's)
};

// What /proc says of a process now; the peaks are the kernel's (VmHWM) or the largest seen.
struct ProcessSample {
  int64_t threads = 0;
  int64_t fds = 0;
  int64_t rss_kb = 0;
  int64_t peak_rss_kb = 0;  // the most it ever held (VmHWM)
};
ProcessSample SampleProcess(pid_t pid);

class OnsetdProcess {
 public:
  // Starts onsetd and waits up to 30 s for its address (and the dashboard's with `http`).
  static absl::StatusOr<std::unique_ptr<OnsetdProcess>> Start(const OnsetdOptions& options);
  // Kills it if still running.
  ~OnsetdProcess();
  OnsetdProcess(const OnsetdProcess&) = delete;
  OnsetdProcess& operator=(const OnsetdProcess&) = delete;

  pid_t pid() const { return pid_; }
  const std::string& address() const { return address_; }
  int http_port() const { return http_port_; }
  const common::ClientSecurity& security() const { return security_; }
  std::string log_path() const { return dir_ + "/onsetd.log"; }
  bool Alive();
  // SIGTERM, then SIGKILL after `within`; true when it exited 0 by itself in time.
  bool Stop(std::chrono::seconds within = std::chrono::seconds(30));

 private:
  OnsetdProcess() = default;
  pid_t pid_ = -1;
  std::string dir_;
  std::string address_;
  int http_port_ = 0;
  common::ClientSecurity security_;
};

}  // namespace onset::bench
