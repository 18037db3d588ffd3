#include "bench/coordinator_idle.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "base/metric_names.h"
#include "bench/latencies.h"
#include "cli/client/study_client.h"
#include "common/grpc_auth.h"
#include "coordinator/server/coordinator_server.h"
#include "worker/coordinator_client.h"

namespace onset::bench {
namespace {

using Clock = std::chrono::steady_clock;

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

// A WSD study of `seeds` trunks, each with `budgets` token budgets as branches: seeds x budgets
// branch cells. The warmup is one token count, so every seed's budgets share one stable phase;
// budgets 4,096 tokens apart give each branch its own branch point (steps are 512 tokens).
std::string StudyYaml(int seeds, int budgets) {
  std::string yaml =
      "name: idle\nmodel: {layers: 1, d_model: 16, heads: 2, seq_len: 16}\n"
      "train: {schedule: wsd, decay_fraction: 0.2, warmup_tokens: 1024, batch_tokens: 512}\n"
      "eval: {niah_samples: 0}\ngrid:\n  seeds: " +
      std::to_string(seeds) + "\n  tokens: [";
  for (int i = 0; i < budgets; ++i) {
    yaml += (i ? ", " : "") + std::to_string(1'000'000 + int64_t{i} * 4096);
  }
  return yaml + "]\n";
}

}  // namespace

int RunIdleBench(const IdleOptions& options) {
  std::string dir = options.dir;
  if (dir.empty()) {
    std::string tmpl = std::filesystem::temp_directory_path() / "onset-idle-XXXXXX";
    if (::mkdtemp(tmpl.data()) == nullptr) return 1;
    dir = tmpl;
  }
  coordinator::ServerConfig config;
  config.db_path = dir + "/onset.db";
  config.listen = "127.0.0.1:0";
  config.token = "bench-token-0123456789abcdef0123456789abcdef";
  config.checkpoint_root = dir + "/checkpoints";  // trunks are planned only with a shared root
  auto server = coordinator::CoordinatorServer::Start(config);
  if (!server.ok()) {
    std::fprintf(stderr, "cannot start the coordinator: %s\n", server.status().ToString().c_str());
    return 1;
  }
  const std::string address = (*server)->address();
  const common::ClientSecurity security{config.token, ""};

  // 1. The study: every branch waits for a trunk, and there are as many trunks as busy workers.
  const int seeds = options.busy_workers;
  const int budgets = std::max(1, options.branches / seeds);
  cli::StudyClient client(address, security, std::chrono::seconds(300));
  auto t = Clock::now();
  auto submitted = client.Submit("idle.yaml", StudyYaml(seeds, budgets));
  if (!submitted.ok()) {
    std::fprintf(stderr, "submit: %s\n", submitted.status().ToString().c_str());
    return 1;
  }
  std::printf("SubmitStudy   %d cells (%d trunks, each with %d budgets as branches) in %.0f ms\n",
              submitted->cells_in_file(), seeds, budgets, Ms(Clock::now() - t));

  // 2. Busy workers lease the trunks and then, until the end, send a metric batch and a
  //    heartbeat every busy_interval_ms. Idle workers poll LeaseJob every poll_interval_ms.
  //    Both kinds are spread evenly over their intervals.
  Latencies busy_lease, report, heartbeat, idle_lease;
  std::atomic<int> errors{0}, busy_without_trunk{0}, idle_got_cell{0};
  std::atomic<int64_t> waiting_seen{0};
  const auto end = Clock::now() + std::chrono::seconds(options.seconds);
  t = Clock::now();
  std::vector<std::thread> threads;
  threads.reserve(options.busy_workers + options.idle_workers);
  for (int w = 0; w < options.busy_workers; ++w) {
    threads.emplace_back([&, w] {
      const auto interval = std::chrono::milliseconds(options.busy_interval_ms);
      auto next = Clock::now() + interval * w / options.busy_workers;
      auto c = worker::NewGrpcCoordinatorClient(address, security);
      auto reg = c->Register("busy-" + std::to_string(w), {"cpu:0"}, "bench", "");
      if (!reg.ok()) {
        ++errors;
        return;
      }
      auto start = Clock::now();
      auto job = c->Lease(reg->worker_id, {"cpu:0"});
      busy_lease.Add(Ms(Clock::now() - start));
      if (!job.ok()) {
        ++errors;
        return;
      }
      if (!job->job) {
        ++busy_without_trunk;
        return;
      }
      for (int64_t step = 0; Clock::now() < end; ++step) {
        std::this_thread::sleep_until(next);
        next += interval;
        std::vector<worker::MetricPoint> batch;
        for (int p = 0; p < options.points; ++p) {
          batch.push_back(
              {p == 0 ? std::string(metric::kTrainLoss) : "bench/m" + std::to_string(p % 10),
               step * options.points + p, 1.0 / (1 + p)});
        }
        start = Clock::now();
        if (!c->ReportMetrics(reg->worker_id, job->job->lease_id, batch).ok()) ++errors;
        report.Add(Ms(Clock::now() - start));
        start = Clock::now();
        if (!c->Heartbeat(reg->worker_id, job->job->lease_id, {step * 512, 1.0}).ok()) ++errors;
        heartbeat.Add(Ms(Clock::now() - start));
      }
    });
  }
  for (int w = 0; w < options.idle_workers; ++w) {
    threads.emplace_back([&, w] {
      const auto interval = std::chrono::milliseconds(options.poll_interval_ms);
      // Start after the busy workers have had a second to take the trunks.
      auto next = Clock::now() + std::chrono::seconds(1) + interval * w / options.idle_workers;
      auto c = worker::NewGrpcCoordinatorClient(address, security);
      auto reg = c->Register("idle-" + std::to_string(w), {"cpu:0"}, "bench", "");
      if (!reg.ok()) {
        ++errors;
        return;
      }
      while (Clock::now() < end) {
        std::this_thread::sleep_until(next);
        next += interval;
        const auto start = Clock::now();
        auto job = c->Lease(reg->worker_id, {"cpu:0"});
        idle_lease.Add(Ms(Clock::now() - start));
        if (!job.ok()) {
          ++errors;
        } else if (job->job) {
          ++idle_got_cell;  // a cell was claimable: the load is not the one meant
        } else {
          waiting_seen = job->queued_waiting;
        }
      }
    });
  }
  for (std::thread& th : threads) th.join();
  std::printf(
      "workers       %d busy (a batch of %d points and a heartbeat every %d ms), %d idle (a "
      "LeaseJob every %d ms), %.1f s\n",
      options.busy_workers, options.points, options.busy_interval_ms, options.idle_workers,
      options.poll_interval_ms, Ms(Clock::now() - t) / 1000);
  std::printf("LeaseJob busy %s\n", busy_lease.Summary().c_str());
  std::printf("LeaseJob idle %s (queued_waiting %lld)\n", idle_lease.Summary().c_str(),
              static_cast<long long>(waiting_seen.load()));
  std::printf("ReportMetrics %s\n", report.Summary().c_str());
  std::printf("Heartbeat     %s\n", heartbeat.Summary().c_str());
  (*server)->Shutdown();
  std::printf("errors        %d (busy workers without a trunk %d, idle polls that got a cell %d)\n",
              errors.load(), busy_without_trunk.load(), idle_got_cell.load());
  if (options.dir.empty()) std::filesystem::remove_all(dir);
  return errors == 0 && busy_without_trunk == 0 && idle_got_cell == 0 ? 0 : 1;
}

}  // namespace onset::bench
