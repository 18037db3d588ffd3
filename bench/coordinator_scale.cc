#include "bench/coordinator_scale.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "base/metric_names.h"
#include "bench/latencies.h"
#include "cli/client/study_client.h"
#include "common/grpc_auth.h"
#include "coordinator/server/coordinator_server.h"
#include "onset/v1/onset.grpc.pb.h"
#include "worker/coordinator_client.h"

namespace onset::bench {
namespace {

using Clock = std::chrono::steady_clock;
namespace v1 = ::onset::v1;

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

std::chrono::system_clock::time_point Deadline() {
  return std::chrono::system_clock::now() + std::chrono::seconds(60);
}

// The directory of this executable: the `onset` CLI is built beside it.
std::filesystem::path OwnDir() {
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::filesystem::path(".") : self.parent_path();
}

// `cells` cells: seeds x train.lr values of a tiny model.
std::string StudyYaml(int cells) {
  const int seeds = std::min(cells, 100);
  const int lrs = (cells + seeds - 1) / seeds;
  std::string yaml =
      "name: scale\nmodel: {layers: 1, d_model: 16, heads: 2, seq_len: 16}\n"
      "train: {tokens: 1M, batch_tokens: 512}\neval: {niah_samples: 0}\ngrid:\n  seeds: " +
      std::to_string(seeds) + "\n  train.lr: [";
  for (int i = 0; i < lrs; ++i) {
    char lr[32];
    std::snprintf(lr, sizeof lr, "%.7g", 1e-4 * (1.0 + i / 1000.0));
    yaml += (i ? ", " : "") + std::string(lr);
  }
  return yaml + "]\n";
}

}  // namespace

int RunScaleBench(const ScaleOptions& options) {
  std::string dir = options.dir;
  if (dir.empty()) {
    std::string tmpl = std::filesystem::temp_directory_path() / "onset-scale-XXXXXX";
    if (::mkdtemp(tmpl.data()) == nullptr) return 1;
    dir = tmpl;
  }
  coordinator::ServerConfig config;
  config.db_path = dir + "/onset.db";
  config.listen = "127.0.0.1:0";
  config.token = "bench-token-0123456789abcdef0123456789abcdef";
  auto server = coordinator::CoordinatorServer::Start(config);
  if (!server.ok()) {
    std::fprintf(stderr, "cannot start the coordinator: %s\n", server.status().ToString().c_str());
    return 1;
  }
  const std::string address = (*server)->address();
  const common::ClientSecurity security{config.token, ""};
  int errors = 0;

  // 1. Submit.
  cli::StudyClient client(address, security, std::chrono::seconds(120));
  const std::string yaml = StudyYaml(options.cells);
  auto t = Clock::now();
  auto submitted = client.Submit("scale.yaml", yaml);
  const double submit_ms = Ms(Clock::now() - t);
  if (!submitted.ok()) {
    std::fprintf(stderr, "submit: %s\n", submitted.status().ToString().c_str());
    return 1;
  }
  std::printf("SubmitStudy   %d cells (%d new, %zu bytes of YAML) in %.0f ms\n",
              submitted->cells_in_file(), submitted->cells_added(), yaml.size(), submit_ms);

  // 2. Paging: every GetStudy and GetResults page, timed one by one.
  auto stub = v1::StudyService::NewStub(common::NewClientChannel(address, security));
  auto page_through = [&](const char* what, auto call) {
    Latencies pages;
    const auto start = Clock::now();
    std::string token;
    int64_t cells = 0;
    do {
      const auto t0 = Clock::now();
      absl::StatusOr<std::pair<int64_t, std::string>> page = call(token);
      pages.Add(Ms(Clock::now() - t0));
      if (!page.ok()) {
        std::fprintf(stderr, "%s: %s\n", what, page.status().ToString().c_str());
        ++errors;
        return;
      }
      cells += page->first;
      token = page->second;
    } while (!token.empty());
    std::printf("%-13s %lld cells in %.0f ms; pages %s\n", what, static_cast<long long>(cells),
                Ms(Clock::now() - start), pages.Summary().c_str());
  };
  auto get_study =
      [&](const std::string& token) -> absl::StatusOr<std::pair<int64_t, std::string>> {
    v1::GetStudyRequest request;
    request.set_name("scale");
    request.set_page_token(token);
    v1::GetStudyResponse response;
    grpc::ClientContext context;
    context.set_deadline(Deadline());
    grpc::Status s = stub->GetStudy(&context, request, &response);
    if (!s.ok()) return absl::UnknownError(s.error_message());
    return std::make_pair(int64_t{response.cells_size()}, response.next_page_token());
  };
  auto get_results =
      [&](const std::string& token) -> absl::StatusOr<std::pair<int64_t, std::string>> {
    v1::GetResultsRequest request;
    request.set_study("scale");
    request.set_page_token(token);
    v1::GetResultsResponse response;
    grpc::ClientContext context;
    context.set_deadline(Deadline());
    grpc::Status s = stub->GetResults(&context, request, &response);
    if (!s.ok()) return absl::UnknownError(s.error_message());
    return std::make_pair(int64_t{response.results_size()}, response.next_page_token());
  };
  page_through("GetStudy", get_study);

  // 3. A watch: the time until its snapshot is complete.
  {
    int messages = 0;
    int64_t cells = 0;
    t = Clock::now();
    absl::Status s = client.Watch("scale", 0, [&](const v1::WatchStudyResponse& m) {
      ++messages;
      cells += m.snapshot().cells_size();
      return m.snapshot_more();
    });
    if (!s.ok()) ++errors;
    std::printf("WatchStudy    snapshot of %lld cells in %d messages, %.0f ms\n",
                static_cast<long long>(cells), messages, Ms(Clock::now() - t));
  }

  // 4. Workers: each registers, then per round leases a cell, reports `batches` batches of
  //    `points` points with a heartbeat after each, and finishes it.
  Latencies lease, report, heartbeat, finish;
  std::atomic<int> worker_errors{0};
  std::atomic<int64_t> points_sent{0};
  t = Clock::now();
  {
    std::vector<std::thread> threads;
    threads.reserve(options.workers);
    for (int w = 0; w < options.workers; ++w) {
      threads.emplace_back([&, w] {
        // Paced: one call every interval_ms, the workers spread evenly over the interval.
        auto next = Clock::now() + std::chrono::microseconds(int64_t{options.interval_ms} * 1000 *
                                                             w / options.workers);
        auto pace = [&] {
          std::this_thread::sleep_until(next);
          next += std::chrono::milliseconds(options.interval_ms);
        };
        auto c = worker::NewGrpcCoordinatorClient(address, security);
        pace();
        auto reg = c->Register("scale-" + std::to_string(w), {"cpu:0"}, "bench", "");
        if (!reg.ok()) {
          ++worker_errors;
          return;
        }
        for (int r = 0; r < options.rounds; ++r) {
          pace();
          auto start = Clock::now();
          auto job = c->Lease(reg->worker_id, {"cpu:0"});
          lease.Add(Ms(Clock::now() - start));
          if (!job.ok()) {
            ++worker_errors;
            return;
          }
          if (!job->job) return;
          for (int b = 0; b < options.batches; ++b) {
            std::vector<worker::MetricPoint> batch;
            for (int p = 0; p < options.points; ++p) {
              batch.push_back(
                  {p == 0 ? std::string(metric::kTrainLoss) : "bench/m" + std::to_string(p % 10),
                   int64_t{b} * options.points + p, 1.0 / (1 + b + p)});
            }
            pace();
            start = Clock::now();
            if (!c->ReportMetrics(reg->worker_id, job->job->lease_id, batch).ok()) ++worker_errors;
            report.Add(Ms(Clock::now() - start));
            points_sent += options.points;
            pace();
            start = Clock::now();
            if (!c->Heartbeat(reg->worker_id, job->job->lease_id,
                              {int64_t{b} * options.points, 1.0})
                     .ok()) {
              ++worker_errors;
            }
            heartbeat.Add(Ms(Clock::now() - start));
          }
          worker::JobResult result;
          result.outcome = worker::JobOutcome::kSucceeded;
          pace();
          start = Clock::now();
          if (!c->Finish(reg->worker_id, job->job->lease_id, result).ok()) ++worker_errors;
          finish.Add(Ms(Clock::now() - start));
        }
      });
    }
    for (std::thread& th : threads) th.join();
  }
  std::printf(
      "workers       %d, one call each every %d ms, x %d rounds x %d batches x %d points: "
      "%lld points in %.1f s\n",
      options.workers, options.interval_ms, options.rounds, options.batches, options.points,
      static_cast<long long>(points_sent.load()), Ms(Clock::now() - t) / 1000);
  std::printf("LeaseJob      %s\n", lease.Summary().c_str());
  std::printf("ReportMetrics %s\n", report.Summary().c_str());
  std::printf("Heartbeat     %s\n", heartbeat.Summary().c_str());
  std::printf("FinishJob     %s\n", finish.Summary().c_str());
  errors += worker_errors.load();

  // 5. Results page by page, now that some cells have metrics.
  page_through("GetResults", get_results);

  // 6. The real CLI: `onset status` and `onset compare` of the whole study, end to end.
  const std::filesystem::path onset = OwnDir() / "onset";
  const std::string token_file = dir + "/token";
  std::ofstream(token_file) << config.token << "\n";
  std::filesystem::permissions(
      token_file, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  for (const std::string command :
       {"status scale", "compare scale --metric train/loss --threshold 0.5"}) {
    const std::string line = onset.string() + " --coordinator " + address + " --token-file " +
                             token_file + " " + command + " >/dev/null 2>" + dir + "/cli.err";
    t = Clock::now();
    const int rc = std::system(line.c_str());
    std::printf("onset %-37s exit %d in %.0f ms\n", command.c_str(), WEXITSTATUS(rc),
                Ms(Clock::now() - t));
    if (rc != 0) {
      std::ifstream err(dir + "/cli.err");
      std::string text((std::istreambuf_iterator<char>(err)), std::istreambuf_iterator<char>());
      std::fprintf(stderr, "%s\n", text.substr(0, 2000).c_str());
      ++errors;
    }
  }

  (*server)->Shutdown();
  std::printf("errors        %d\n", errors);
  if (options.dir.empty()) std::filesystem::remove_all(dir);
  return errors == 0 ? 0 : 1;
}

}  // namespace onset::bench
