// Load on the coordinator: N simulated workers on loopback lease C cells, report their metrics in
// batches with heartbeats, and finish them, through the real gRPC server and SQLite store (on
// disk, WAL). Prints the ingest rate and the latency of each RPC. No trainer runs.
//
//   onset-coordinator-bench [--workers 16] [--cells 256] [--batches 20] [--points 50]
//                           [--readers 0] [--watchers 0] [--dir DIR]
//   onset-coordinator-bench --scale [--cells 100000] [--workers 1000] [--rounds 2]
//                                   [--interval-ms 1000]
//   onset-coordinator-bench --idle [--workers 500] [--busy 64] [--cells 100000] [--seconds 60]
//   onset-coordinator-bench --costs [--cells 100000] [--dry-runs 6] [--workers 3000]
//
// --readers N adds N clients that read the whole study (GetStudy) back to back, and
// --watchers N that many `onset watch` streams, to show what reads cost the write path.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>

#include "bench/coordinator_costs.h"
#include "bench/coordinator_idle.h"
#include "bench/coordinator_scale.h"
#include "bench/latencies.h"
#include "cli/client/study_client.h"
#include "coordinator/server/coordinator_server.h"
#include "worker/coordinator_client.h"

namespace {

using Clock = std::chrono::steady_clock;
using onset::bench::Latencies;

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

}  // namespace

int main(int argc, char** argv) {
  int workers = 16, cells = 256, batches = 20, points = 50, readers = 0, watchers = 0;
  std::string dir;
  bool scale = false, idle = false, costs = false;
  onset::bench::ScaleOptions scale_options;
  onset::bench::IdleOptions idle_options;
  onset::bench::CostsOptions costs_options;
  CLI::App app{"onset-coordinator-bench: metric ingest and RPC latency of onsetd on loopback"};
  app.add_flag("--scale", scale,
               "the scale run instead: a --cells study (default 100000) paged through, then "
               "--workers workers (default 1000) leasing --rounds cells each");
  auto* idle_flag = app.add_flag(
      "--idle", idle,
      "idle workers beside busy ones instead: a WSD study of --cells branches (default 100000) "
      "waiting for --busy trunks, each leased by a busy worker, while --workers idle workers "
      "(default 500) poll LeaseJob");
  idle_flag->excludes(app.get_option("--scale"));
  app.add_flag("--costs", costs,
               "what single calls cost a real onsetd (a child process) at the limits instead: a "
               "--cells submission (default 100000), --dry-runs dry runs at once, logs by prefix, "
               "a rerun by id, --workers workers (default 3000) of 1,024 devices listed; with "
               "the heartbeats of four busy workers meanwhile")
      ->excludes(app.get_option("--scale"))
      ->excludes(idle_flag);
  app.add_option("--dry-runs", costs_options.dry_runs, "--costs: dry runs sent at once")
      ->check(CLI::Range(1, 64));
  app.add_option("--busy", idle_options.busy_workers, "--idle: busy workers, one trunk each")
      ->check(CLI::Range(1, 1000));
  app.add_option("--seconds", idle_options.seconds, "--idle: how long the workers run")
      ->check(CLI::Range(1, 3600));
  app.add_option("--poll-ms", idle_options.poll_interval_ms,
                 "--idle: each idle worker's LeaseJob interval")
      ->check(CLI::Range(1, 60000));
  app.add_option("--rounds", scale_options.rounds, "--scale: cells each worker runs")
      ->check(CLI::Range(1, 1000));
  app.add_option("--interval-ms", scale_options.interval_ms,
                 "--scale: each worker makes one call this often (0: back to back)")
      ->check(CLI::Range(0, 60000));
  auto* workers_option =
      app.add_option("--workers", workers, "simulated workers")->check(CLI::Range(1, 10000));
  auto* cells_option =
      app.add_option("--cells", cells, "cells in the study")->check(CLI::Range(1, 100000));
  app.add_option("--batches", batches, "metric batches per cell")->check(CLI::Range(1, 100000));
  app.add_option("--points", points, "points per batch")->check(CLI::Range(1, 100000));
  app.add_option("--readers", readers, "clients reading the study meanwhile")
      ->check(CLI::Range(0, 1024));
  app.add_option("--watchers", watchers, "WatchStudy streams meanwhile")
      ->check(CLI::Range(0, 1024));
  app.add_option("--dir", dir, "directory for the database (default: a fresh temporary one)");
  CLI11_PARSE(app, argc, argv);
  if (scale) {
    if (workers_option->count() > 0) scale_options.workers = workers;
    if (cells_option->count() > 0) scale_options.cells = cells;
    if (app.count("--batches") > 0) scale_options.batches = batches;
    if (app.count("--points") > 0) scale_options.points = points;
    scale_options.dir = dir;
    return onset::bench::RunScaleBench(scale_options);
  }
  if (idle) {
    if (workers_option->count() > 0) idle_options.idle_workers = workers;
    if (cells_option->count() > 0) idle_options.branches = cells;
    if (app.count("--points") > 0) idle_options.points = points;
    idle_options.dir = dir;
    return onset::bench::RunIdleBench(idle_options);
  }
  if (costs) {
    if (workers_option->count() > 0) costs_options.big_workers = workers;
    if (cells_option->count() > 0) costs_options.cells = cells;
    costs_options.bin_dir = std::filesystem::read_symlink("/proc/self/exe").parent_path();
    costs_options.dir = dir;
    return onset::bench::RunCostsBench(costs_options);
  }
  if (dir.empty()) {
    std::string tmpl = std::filesystem::temp_directory_path() / "onset-bench-XXXXXX";
    if (::mkdtemp(tmpl.data()) == nullptr) return 1;
    dir = tmpl;
  }

  onset::coordinator::ServerConfig config;
  config.db_path = dir + "/onset.db";
  config.listen = "127.0.0.1:0";
  config.token = "bench-token-0123456789abcdef0123456789abcdef";
  auto server = onset::coordinator::CoordinatorServer::Start(config);
  if (!server.ok()) {
    std::fprintf(stderr, "cannot start the coordinator: %s\n", server.status().ToString().c_str());
    return 1;
  }
  const std::string address = (*server)->address();
  onset::common::ClientSecurity security{config.token, ""};

  // One cell per seed of a tiny config.
  std::string yaml =
      "name: bench\nmodel: {layers: 1, d_model: 16, heads: 2, seq_len: 16}\n"
      "train: {tokens: 1M, batch_tokens: 512}\neval: {niah_samples: 0}\ngrid:\n  seeds: [";
  for (int i = 0; i < cells; ++i) yaml += (i ? ", " : "") + std::to_string(i);
  yaml += "]\n";
  onset::cli::StudyClient study_client(address, security);
  if (auto s = study_client.Submit("bench.yaml", yaml); !s.ok()) {
    std::fprintf(stderr, "submit: %s\n", s.status().ToString().c_str());
    return 1;
  }

  Latencies lease, report, heartbeat, finish;
  std::atomic<int64_t> ingested{0};
  std::atomic<int> errors{0};
  const auto t0 = Clock::now();
  std::vector<std::thread> threads;
  for (int w = 0; w < workers; ++w) {
    threads.emplace_back([&, w] {
      auto client = onset::worker::NewGrpcCoordinatorClient(address, security);
      auto reg = client->Register("bench-" + std::to_string(w), {"cpu:0"}, "bench", "");
      if (!reg.ok()) {
        ++errors;
        return;
      }
      while (true) {
        auto start = Clock::now();
        auto job = client->Lease(reg->worker_id, {"cpu:0"});
        lease.Add(Ms(Clock::now() - start));
        if (!job.ok()) {
          ++errors;
          return;
        }
        if (!job->job) return;
        for (int b = 0; b < batches; ++b) {
          std::vector<onset::worker::MetricPoint> batch;
          for (int p = 0; p < points; ++p) {
            batch.push_back(
                {"bench/m" + std::to_string(p % 10), int64_t{b} * points + p, 1.0 / (1 + p)});
          }
          start = Clock::now();
          if (!client->ReportMetrics(reg->worker_id, job->job->lease_id, batch).ok()) ++errors;
          report.Add(Ms(Clock::now() - start));
          ingested += points;
          start = Clock::now();
          if (!client->Heartbeat(reg->worker_id, job->job->lease_id, {int64_t{b} * points, 1.0})
                   .ok()) {
            ++errors;
          }
          heartbeat.Add(Ms(Clock::now() - start));
        }
        onset::worker::JobResult result;
        result.outcome = onset::worker::JobOutcome::kSucceeded;
        start = Clock::now();
        if (!client->Finish(reg->worker_id, job->job->lease_id, result).ok()) ++errors;
        finish.Add(Ms(Clock::now() - start));
      }
    });
  }
  // Readers and watchers run until the workers are done.
  std::atomic<bool> workers_done{false};
  Latencies reads;
  std::atomic<int64_t> watch_messages{0};
  std::vector<std::thread> lookers;
  for (int r = 0; r < readers; ++r) {
    lookers.emplace_back([&] {
      onset::cli::StudyClient reader(address, security);
      while (!workers_done) {
        const auto start = Clock::now();
        if (!reader.Get("bench").ok()) ++errors;
        reads.Add(Ms(Clock::now() - start));
      }
    });
  }
  for (int r = 0; r < watchers; ++r) {
    lookers.emplace_back([&] {
      onset::cli::StudyClient watcher(address, security);
      (void)watcher.Watch("bench", 0, [&](const onset::v1::WatchStudyResponse&) {
        ++watch_messages;
        return !workers_done.load();
      });
    });
  }
  for (std::thread& t : threads) t.join();
  workers_done = true;
  for (std::thread& t : lookers) t.join();
  const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  (*server)->Shutdown();

  std::printf("cells %d, workers %d, %d batches x %d points per cell: %lld points in %.2f s\n",
              cells, workers, batches, points, static_cast<long long>(ingested.load()), seconds);
  std::printf("ingest        %.0f points/s, %.0f batches/s\n", ingested.load() / seconds,
              ingested.load() / seconds / points);
  std::printf("LeaseJob      %s\n", lease.Summary().c_str());
  std::printf("ReportMetrics %s\n", report.Summary().c_str());
  std::printf("Heartbeat     %s\n", heartbeat.Summary().c_str());
  std::printf("FinishJob     %s\n", finish.Summary().c_str());
  if (readers > 0) std::printf("GetStudy      %s (%d readers)\n", reads.Summary().c_str(), readers);
  if (watchers > 0) {
    std::printf("WatchStudy    %lld messages to %d watchers\n",
                static_cast<long long>(watch_messages.load()), watchers);
  }
  std::printf("errors        %d\n", errors.load());
  std::filesystem::remove_all(dir);
  return errors.load() == 0 ? 0 : 1;
}
