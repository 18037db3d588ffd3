// A flood on the dashboard port of a real onsetd, while simulated workers use gRPC. Starts
// onsetd (the binary) on a fresh directory with the dashboard on, then runs two phases of equal
// length with the same workers: a quiet one, and one in which the dashboard port is held by
// thousands of idle and half-sent connections and hit by malformed requests. Prints the gRPC
// latencies of both phases, what a dashboard viewer got, onsetd's peak threads, descriptors
// and memory, and how much it logged; then checks that onsetd is alive, that every metric point
// the workers had acknowledged is in the database, and that onsetd stops cleanly. Stops itself
// after --duration seconds (a watchdog kills everything 60 s later if something hangs).
//
//   onset-dashboard-flood [--duration 40] [--idle 4000] [--malformed 200] [--workers 8]
//                         [--onsetd-nofile 1024] [--onsetd PATH] [--dir DIR]
//
// Exits 0 when onsetd survived, every gRPC call succeeded, nothing was lost and onsetd stopped
// cleanly; 1 otherwise (the directory is then kept, with onsetd.log).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "bench/latencies.h"
#include "bench/onsetd_process.h"
#include "cli/client/study_client.h"
#include "common/auth_token.h"
#include "worker/coordinator_client.h"

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr int kQuiet = 0, kFlood = 1;
const char* const kPhaseNames[] = {"quiet", "flood"};

using onset::bench::Latencies;

struct PhaseStats {
  Latencies lease, report, heartbeat, finish, page;
  std::atomic<int64_t> rpc_errors{0};
  std::atomic<int64_t> page_ok{0}, page_busy{0}, page_failed{0};
  std::atomic<int64_t> peak_threads{0}, peak_fds{0}, peak_rss_kb{0};
  int64_t log_bytes = 0;
};

void RaiseToMax(std::atomic<int64_t>& peak, int64_t v) {
  int64_t cur = peak.load();
  while (v > cur && !peak.compare_exchange_weak(cur, v)) {
  }
}

// A TCP connection to 127.0.0.1:`port`, or -1. Gives up connecting after a second (a full
// listen queue drops SYNs).
int Connect(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  timeval tv{1, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

bool SendAll(int fd, const std::string& data) {
  size_t sent = 0;
  while (sent < data.size()) {
    const ssize_t n = ::send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return false;
    sent += static_cast<size_t>(n);
  }
  return true;
}

// Sends `request` on a fresh connection and reads until the server closes or 1 s passes
// without data; the response's status code, 0 when there was none.
int Exchange(int port, const std::string& request) {
  const int fd = Connect(port);
  if (fd < 0) return 0;
  std::string response;
  if (SendAll(fd, request)) {
    char buf[8192];
    ssize_t n;
    while ((n = ::recv(fd, buf, sizeof buf, 0)) > 0) response.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  if (response.rfind("HTTP/1.", 0) != 0 || response.size() < 12) return 0;
  return std::atoi(response.c_str() + 9);
}

// onsetd's threads, open descriptors and resident memory, from /proc.
void Sample(pid_t pid, PhaseStats& stats) {
  const onset::bench::ProcessSample now = onset::bench::SampleProcess(pid);
  RaiseToMax(stats.peak_fds, now.fds);
  RaiseToMax(stats.peak_threads, now.threads);
  RaiseToMax(stats.peak_rss_kb, now.rss_kb);
}

int64_t FileSize(const fs::path& path) {
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  return ec ? 0 : static_cast<int64_t>(size);
}

int64_t CountMetricPoints(const fs::path& db) {
  sqlite3* conn = nullptr;
  int64_t count = -1;
  if (sqlite3_open_v2(db.c_str(), &conn, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(conn, "SELECT COUNT(*) FROM metrics", -1, &stmt, nullptr) == SQLITE_OK &&
        sqlite3_step(stmt) == SQLITE_ROW) {
      count = sqlite3_column_int64(stmt, 0);
    }
    sqlite3_finalize(stmt);
  }
  sqlite3_close(conn);
  return count;
}

}  // namespace

int main(int argc, char** argv) {
  int duration_s = 40, idle = 4000, malformed_per_s = 200, workers = 8, points = 50;
  int interval_ms = 20, batches_per_cell = 10, cells = 4096, onsetd_nofile = 1024;
  std::string onsetd = (fs::read_symlink("/proc/self/exe").parent_path() / "onsetd").string();
  std::string dir;
  CLI::App app{
      "onset-dashboard-flood: gRPC latency of a real onsetd while its dashboard port "
      "is flooded"};
  app.add_option("--duration", duration_s, "seconds in all, half quiet and half flooded")
      ->check(CLI::Range(4, 3600))
      ->capture_default_str();
  app.add_option("--idle", idle, "idle and half-sent connections held during the flood")
      ->check(CLI::Range(0, 1'000'000))
      ->capture_default_str();
  app.add_option("--malformed", malformed_per_s, "malformed requests per second during the flood")
      ->check(CLI::Range(0, 100'000))
      ->capture_default_str();
  app.add_option("--workers", workers, "simulated workers")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  app.add_option("--points", points, "points per metric batch")
      ->check(CLI::Range(1, 100'000))
      ->capture_default_str();
  app.add_option("--interval-ms", interval_ms, "each worker's pause between batches")
      ->check(CLI::Range(0, 60'000))
      ->capture_default_str();
  app.add_option("--batches-per-cell", batches_per_cell, "batches before a worker leases anew")
      ->check(CLI::Range(1, 100'000))
      ->capture_default_str();
  app.add_option("--cells", cells, "cells in the study (workers stop early if they run out)")
      ->check(CLI::Range(1, 1'000'000))
      ->capture_default_str();
  app.add_option("--onsetd-nofile", onsetd_nofile,
                 "onsetd's open-file limit (0: this process's, raised to its hard limit)")
      ->check(CLI::Range(0, 10'000'000))
      ->capture_default_str();
  app.add_option("--onsetd", onsetd, "the onsetd binary")->capture_default_str();
  app.add_option("--dir", dir, "directory for onsetd's files (default: a fresh temporary one)");
  CLI11_PARSE(app, argc, argv);

  // The flood needs descriptors: take all this process may have.
  rlimit limit{};
  ::getrlimit(RLIMIT_NOFILE, &limit);
  limit.rlim_cur = limit.rlim_max;
  ::setrlimit(RLIMIT_NOFILE, &limit);
  if (static_cast<rlim_t>(idle) + 256 > limit.rlim_cur) {
    std::fprintf(stderr, "--idle %d needs more descriptors than the limit %llu (ulimit -n)\n", idle,
                 static_cast<unsigned long long>(limit.rlim_cur));
    return 1;
  }
  const bool own_dir = dir.empty();
  if (own_dir) {
    std::string tmpl = (fs::temp_directory_path() / "onset-flood-XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) return 1;
    dir = tmpl;
  }
  const fs::path root = dir;
  std::error_code made;
  fs::create_directories(root, made);
  const fs::path log = root / "onsetd.log";

  onset::bench::OnsetdOptions onsetd_options;
  onsetd_options.binary = onsetd;
  onsetd_options.dir = dir;
  onsetd_options.http = true;
  onsetd_options.nofile = onsetd_nofile;
  auto started = onset::bench::OnsetdProcess::Start(onsetd_options);
  if (!started.ok()) {
    std::fprintf(stderr, "%s\n", started.status().ToString().c_str());
    return 1;
  }
  onset::bench::OnsetdProcess& daemon = **started;
  const pid_t pid = daemon.pid();
  // Whatever happens, nothing outlives --duration by more than a minute.
  std::thread([pid, duration_s] {
    std::this_thread::sleep_for(std::chrono::seconds(duration_s + 60));
    std::fprintf(stderr, "watchdog: still running %d s after the end; killing onsetd\n", 60);
    ::kill(pid, SIGKILL);
    ::_exit(2);
  }).detach();
  const std::string address = daemon.address();
  const int http_port = daemon.http_port();
  const onset::common::ClientSecurity security = daemon.security();

  std::string yaml =
      "name: flood\nmodel: {layers: 1, d_model: 16, heads: 2, seq_len: 16}\n"
      "train: {tokens: 1M, batch_tokens: 512}\neval: {niah_samples: 0}\ngrid:\n  seeds: [";
  for (int i = 0; i < cells; ++i) yaml += (i ? ", " : "") + std::to_string(i);
  yaml += "]\n";
  if (auto s = onset::cli::StudyClient(address, security).Submit("flood.yaml", yaml); !s.ok()) {
    std::fprintf(stderr, "submit: %s\n", s.status().ToString().c_str());
    return 1;
  }

  PhaseStats phases[2];
  std::atomic<int> phase{kQuiet};
  std::atomic<bool> stop{false};
  std::atomic<int64_t> acknowledged{0}, unacknowledged{0};
  std::atomic<int> out_of_cells{0};

  std::vector<std::thread> threads;
  for (int w = 0; w < workers; ++w) {
    threads.emplace_back([&, w] {
      auto client = onset::worker::NewGrpcCoordinatorClient(address, security);
      absl::StatusOr<onset::worker::Registration> reg =
          client->Register("flood-" + std::to_string(w), {"cpu:0"}, "bench", "");
      if (!reg.ok()) {
        ++phases[phase].rpc_errors;
        return;
      }
      while (!stop) {
        PhaseStats* p = &phases[phase];
        auto start = Clock::now();
        auto job = client->Lease(reg->worker_id, {"cpu:0"});
        p->lease.Add(Clock::now() - start);
        if (!job.ok()) {
          ++p->rpc_errors;
          std::this_thread::sleep_for(std::chrono::milliseconds(100));
          continue;
        }
        if (!job->job) {
          ++out_of_cells;
          return;
        }
        const std::string lease = job->job->lease_id;
        for (int b = 0; b < batches_per_cell && !stop; ++b) {
          p = &phases[phase];
          std::vector<onset::worker::MetricPoint> batch;
          for (int i = 0; i < points; ++i) {
            batch.push_back({"flood/m", int64_t{b} * points + i, 1.0 / (1 + i)});
          }
          start = Clock::now();
          const absl::Status reported = client->ReportMetrics(reg->worker_id, lease, batch);
          p->report.Add(Clock::now() - start);
          if (reported.ok()) {
            acknowledged += points;
          } else {
            ++p->rpc_errors;
            unacknowledged += points;
          }
          start = Clock::now();
          if (!client->Heartbeat(reg->worker_id, lease, {int64_t{b} * points, 1.0}).ok()) {
            ++p->rpc_errors;
          }
          p->heartbeat.Add(Clock::now() - start);
          std::this_thread::sleep_for(std::chrono::milliseconds(interval_ms));
        }
        onset::worker::JobResult result;
        result.outcome = onset::worker::JobOutcome::kSucceeded;
        start = Clock::now();
        if (!client->Finish(reg->worker_id, lease, result).ok()) ++phases[phase].rpc_errors;
        phases[phase].finish.Add(Clock::now() - start);
      }
    });
  }

  // A viewer: the study list every 200 ms, one connection each.
  const std::string viewer_request =
      "GET /api/studies HTTP/1.1\r\nHost: 127.0.0.1\r\n"
      "Authorization: Bearer " +
      security.token + "\r\nConnection: close\r\n\r\n";
  threads.emplace_back([&] {
    while (!stop) {
      PhaseStats& p = phases[phase];
      const auto start = Clock::now();
      const int status = Exchange(http_port, viewer_request);
      if (status == 200) {
        p.page.Add(Clock::now() - start);
        ++p.page_ok;
      } else if (status == 503) {
        ++p.page_busy;
      } else {
        ++p.page_failed;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  });

  // onsetd's resources, every 250 ms.
  threads.emplace_back([&] {
    while (!stop) {
      Sample(pid, phases[phase]);
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
    }
  });

  const auto half = std::chrono::seconds(duration_s) / 2;
  const int64_t log_at_start = FileSize(log);
  std::this_thread::sleep_for(half);
  const int64_t log_at_flood = FileSize(log);
  phases[kQuiet].log_bytes = log_at_flood - log_at_start;
  phase = kFlood;
  const auto flood_end = Clock::now() + half;

  // The flood: `idle` connections held open (half of them with half a request), replaced as
  // the server closes them; and malformed requests at a steady rate.
  std::atomic<int64_t> opened{0}, failed_connects{0}, closed_by_server{0};
  std::atomic<int64_t> malformed_sent{0}, malformed_400{0}, malformed_other{0};
  std::thread holder([&] {
    std::vector<int> fds;
    auto open_one = [&](size_t i) {
      const int fd = Connect(http_port);
      if (fd < 0) {
        ++failed_connects;
        return -1;
      }
      ++opened;
      if (i % 2 == 1) SendAll(fd, "GET /api/studies HTTP/1.1\r\nHost: 127.0.");
      return fd;
    };
    for (size_t i = 0; i < static_cast<size_t>(idle) && Clock::now() < flood_end; ++i) {
      fds.push_back(open_one(i));
    }
    std::vector<pollfd> polled;
    while (Clock::now() < flood_end) {
      polled.clear();
      for (int fd : fds) polled.push_back({fd, POLLIN, 0});  // fd -1 is skipped by poll
      if (::poll(polled.data(), polled.size(), 100) < 0) break;
      for (size_t i = 0; i < polled.size() && Clock::now() < flood_end; ++i) {
        if (fds[i] >= 0 && polled[i].revents == 0) continue;
        if (fds[i] >= 0) {
          char buf[4096];
          const ssize_t n = ::recv(fds[i], buf, sizeof buf, MSG_DONTWAIT);
          if (n > 0 || (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))) continue;
          ++closed_by_server;
          ::close(fds[i]);
        }
        fds[i] = open_one(i);
      }
    }
    for (int fd : fds) {
      if (fd >= 0) ::close(fd);
    }
  });
  const std::string garbage[] = {
      "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nno colon here\r\n\r\n",
      "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n",
      "GET / HTTP/1.1\r\nX-Big: " + std::string(20000, 'a') + "\r\n\r\n",
      "POST /api/studies HTTP/1.1\r\nContent-Length: 4\r\n\r\nabcd",
  };
  std::vector<std::thread> senders;
  constexpr int kSenders = 4;
  for (int s = 0; s < kSenders && malformed_per_s > 0; ++s) {
    senders.emplace_back([&, s] {
      const auto period = std::chrono::microseconds(1'000'000LL * kSenders / malformed_per_s);
      auto next = Clock::now();
      for (int64_t i = s; Clock::now() < flood_end; i += kSenders) {
        const int status = Exchange(http_port, garbage[i % std::size(garbage)]);
        ++malformed_sent;
        if (status >= 400 && status < 500) {
          ++malformed_400;
        } else {
          ++malformed_other;
        }
        next += period;
        std::this_thread::sleep_until(next);
      }
    });
  }
  holder.join();
  for (std::thread& t : senders) t.join();
  phases[kFlood].log_bytes = FileSize(log) - log_at_flood;
  const bool alive = daemon.Alive();
  stop = true;
  for (std::thread& t : threads) t.join();

  // Stop onsetd; it must exit cleanly within 30 s.
  const bool clean = daemon.Stop(std::chrono::seconds(30));
  const int64_t in_db = CountMetricPoints(root / "onset.db");

  std::printf(
      "onsetd open-file limit %d; %d workers, %d points per batch every %d ms; "
      "%d s quiet, then %d s flooded\n",
      onsetd_nofile > 0 ? onsetd_nofile : static_cast<int>(limit.rlim_cur), workers, points,
      interval_ms, duration_s / 2, duration_s / 2);
  std::printf(
      "flood: %d idle connections kept open, each re-opened when onsetd closes it (%lld "
      "opened, %lld closed by onsetd, %lld connects failed); %lld malformed requests (%lld "
      "answered 4xx, %lld not)\n",
      idle, static_cast<long long>(opened.load()), static_cast<long long>(closed_by_server.load()),
      static_cast<long long>(failed_connects.load()), static_cast<long long>(malformed_sent.load()),
      static_cast<long long>(malformed_400.load()), static_cast<long long>(malformed_other.load()));
  for (int i : {kQuiet, kFlood}) {
    PhaseStats& p = phases[i];
    std::printf("\n[%s]\n", kPhaseNames[i]);
    std::printf("  LeaseJob       %s\n", p.lease.Summary().c_str());
    std::printf("  ReportMetrics  %s\n", p.report.Summary().c_str());
    std::printf("  Heartbeat      %s\n", p.heartbeat.Summary().c_str());
    std::printf("  FinishJob      %s\n", p.finish.Summary().c_str());
    std::printf("  gRPC errors    %lld\n", static_cast<long long>(p.rpc_errors.load()));
    std::printf("  dashboard GET  %s; %lld ok, %lld 503, %lld failed\n", p.page.Summary().c_str(),
                static_cast<long long>(p.page_ok.load()),
                static_cast<long long>(p.page_busy.load()),
                static_cast<long long>(p.page_failed.load()));
    std::printf(
        "  onsetd peak    %lld threads, %lld descriptors, %.1f MiB resident; logged %lld "
        "bytes\n",
        static_cast<long long>(p.peak_threads.load()), static_cast<long long>(p.peak_fds.load()),
        p.peak_rss_kb.load() / 1024.0, static_cast<long long>(p.log_bytes));
  }
  const int64_t lost = acknowledged.load() - in_db;
  std::printf("\nmetric points acknowledged %lld (%lld more not), in the database %lld: %s\n",
              static_cast<long long>(acknowledged.load()),
              static_cast<long long>(unacknowledged.load()), static_cast<long long>(in_db),
              lost <= 0 ? "none lost" : "LOST SOME");
  if (out_of_cells > 0)
    std::printf("(%d workers ran out of cells: raise --cells)\n", out_of_cells.load());
  std::printf("onsetd %s the flood and %s\n", alive ? "survived" : "DID NOT SURVIVE",
              clean ? "stopped cleanly" : "did NOT stop cleanly");
  const int64_t errors = phases[kQuiet].rpc_errors + phases[kFlood].rpc_errors;
  std::printf("gRPC errors %lld\n", static_cast<long long>(errors));
  const bool passed = alive && clean && lost <= 0 && errors == 0;
  if (own_dir && passed) fs::remove_all(root);
  return passed ? 0 : 1;
}
