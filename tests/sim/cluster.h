// The processes of the lifecycle simulator (simulation.h) on loopback: the real onsetd (with the
// full-disk shim preloaded) on a fixed port, and real onset-workers running the scripted trainer,
// each reaching onsetd through a TCP proxy of its own that can cut or slow its connection. What
// the simulator does to them - signals, restarts, partitions, slow replies, a full disk - goes
// through here.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "tests/testing/tcp_proxy.h"
#include "worker/process_launcher.h"

namespace onset::sim {

struct ClusterConfig {
  std::string bin_dir;  // onsetd, onset-worker, onset-sim-trainer, libonset-sim-full-disk.so
  std::string dir;      // everything it writes: database, work dirs, checkpoints, journal, logs
  int workers = 3;
  int64_t lease_ttl_ms = 3000;
  int64_t heartbeat_ms = 300;
  int64_t retry_backoff_ms = 200;
  int max_failures = 3;
  int step_ms = 60;        // the scripted trainer's step
  int crash_permille = 0;  // its chance per step of failing on purpose
  // onsetd's rotating backups into DIR/rotation (--backup-every in whole seconds; 0: none).
  int backup_every_s = 0;
  int backup_keep = 2;
  // onsetd's --stalled-reader-limit-ms; 0: its default (and a binary without the flag runs).
  int64_t stalled_reader_limit_ms = 0;
};

// How a run of the `onset` CLI ended.
struct CliRun {
  int code = -1;  // 128 + the signal when killed; -1 when it did not start
  std::string out;
  std::string err;
};

class Cluster {
 public:
  explicit Cluster(ClusterConfig config);
  ~Cluster();  // stops everything
  Cluster(const Cluster&) = delete;
  Cluster& operator=(const Cluster&) = delete;

  // Starts onsetd and every worker; false (with *why) when onsetd does not come up.
  bool Start(std::string* why);

  const std::string& address() const { return address_; }  // onsetd's, for clients
  const std::string& token() const { return token_; }
  const std::string& dir() const { return config_.dir; }
  std::string TokenFile() const;
  // The database onsetd serves (DIR/onset.db unless ServeDb said otherwise).
  std::string Db() const;
  std::string RotationDir() const;  // where its rotating backups go
  std::string JournalDir() const;
  int workers() const { return static_cast<int>(workers_.size()); }

  // onsetd: signalled (SIGKILL, SIGTERM, SIGHUP...) and waited for; started again.
  void SignalDaemon(int sig);
  // From its next start on, onsetd serves `path` (a backup served where it lies).
  void ServeDb(std::string path);
  // The documented restore (docs/operating-onsetd.md): onsetd stopped with SIGTERM, `backup`
  // copied in place of the database (its -wal and -shm removed), onsetd started again. False,
  // with *why, when onsetd does not come up.
  bool RestoreBackup(const std::string& backup, std::string* why);

  // The real `onset` CLI against this onsetd, as an operator runs it (--coordinator and
  // --token-file added), given up to `limit`.
  CliRun RunCli(std::vector<std::string> args,
                std::chrono::milliseconds limit = std::chrono::seconds(60));
  bool DaemonRuns() const;
  bool StartDaemon(std::string* why);

  // A worker: signalled; waited for up to `wait` (a worker stopping cleanly hands its cells
  // back first); started again (a new worker id, the same work directory).
  void SignalWorker(int i, int sig);
  bool WaitWorker(int i, std::chrono::milliseconds wait);
  bool WorkerRuns(int i) const;
  void StartWorker(int i);

  // The network between worker `i` and onsetd.
  void Cut(int i);
  void Heal(int i);
  void DelayReplies(int i, int ms);

  // Every regular-file write of onsetd fails with ENOSPC while on (tests/sim/full_disk.cc).
  void SetDiskFull(bool full);
  bool DiskFull() const;

  // Ends every fault: heals the network and the disk, starts what is not running.
  void Restore();

  // Stops every process cleanly (workers first).
  void Stop();

 private:
  std::string Log(const std::string& name) const;
  // onsetd on `port` from its next start, and every worker's proxy in front of it.
  void UsePort(int port);

  const ClusterConfig config_;
  worker::PosixProcessLauncher launcher_;
  std::string address_;
  std::string db_;
  int port_ = 0;
  std::string token_;
  std::unique_ptr<worker::Process> daemon_;
  std::vector<std::unique_ptr<worker::Process>> workers_;
  std::vector<std::unique_ptr<testutil::TcpProxy>> proxies_;
};

}  // namespace onset::sim
