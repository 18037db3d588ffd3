#include "bench/coordinator_costs.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "bench/latencies.h"
#include "bench/onsetd_process.h"
#include "cli/client/study_client.h"
#include "worker/coordinator_client.h"

namespace onset::bench {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

// A study of about `cells` cells: ten token budgets times cells/10 seeds (a grid axis lists at
// most 10,000 values), with tiny models: this measures the coordinator.
std::string SeedsStudy(const std::string& name, int cells) {
  const int budgets = cells >= 10 ? 10 : 1;
  std::string yaml = "name: " + name +
                     "\nmodel: {layers: 1, d_model: 16, heads: 2, seq_len: 16}\n"
                     "train: {batch_tokens: 512}\neval: {niah_samples: 0}\n"
                     "grid:\n  tokens: [";
  for (int b = 0; b < budgets; ++b) yaml += (b ? ", " : "") + std::to_string((b + 1) * 1'000'000);
  yaml += "]\n  seeds: [";
  for (int i = 0; i < cells / budgets; ++i) yaml += (i ? ", " : "") + std::to_string(i);
  return yaml + "]\n";
}

// Four workers that each hold a lease and heartbeat it every 100 ms, their latencies recorded
// per phase: what every other worker of a busy coordinator would feel while a call runs.
class Heartbeats {
 public:
  static constexpr int kWorkers = 4;
  static constexpr int kMaxPhases = 16;

  Heartbeats(const std::string& address, const common::ClientSecurity& security)
      : address_(address), security_(security) {}

  // Leases the cells of the (already submitted) heartbeat study; false when a worker got none.
  bool Start() {
    std::atomic<int> leased{0};
    for (int w = 0; w < kWorkers; ++w) {
      threads_.emplace_back([this, w, &leased] {
        auto client = worker::NewGrpcCoordinatorClient(address_, security_);
        auto reg = client->Register("heartbeat-" + std::to_string(w), {"cpu:0"}, "bench", "");
        if (!reg.ok()) return;
        auto job = client->Lease(reg->worker_id, {"cpu:0"});
        if (!job.ok() || !job->job) return;
        ++leased;
        const std::string lease = job->job->lease_id;
        for (int64_t step = 1; !stop_; ++step) {
          std::this_thread::sleep_for(std::chrono::milliseconds(100));
          const auto start = Clock::now();
          auto beat = client->Heartbeat(reg->worker_id, lease, {step * 512, 1.0});
          phases_[phase_].Add(Ms(Clock::now() - start));
          if (!beat.ok() || beat->cancel) ++failed_;
        }
      });
    }
    for (auto deadline = Clock::now() + std::chrono::seconds(30);
         leased < kWorkers && Clock::now() < deadline;) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return leased == kWorkers;
  }
  void Phase(int phase) { phase_ = std::min(phase, kMaxPhases - 1); }
  std::string Summary(int phase) { return phases_[phase].Summary(); }
  int failed() const { return failed_; }
  void Stop() {
    stop_ = true;
    for (std::thread& t : threads_) t.join();
    threads_.clear();
  }
  ~Heartbeats() {
    if (!threads_.empty()) Stop();
  }

 private:
  std::string address_;
  common::ClientSecurity security_;
  std::vector<std::thread> threads_;
  std::atomic<bool> stop_{false};
  std::atomic<int> phase_{0};
  std::atomic<int> failed_{0};
  Latencies phases_[kMaxPhases];
};

// GET http://ADDRESS/metrics with the token, within 60 s.
absl::StatusOr<std::string> GetMetrics(const std::string& address, const std::string& token) {
  namespace http = boost::beast::http;
  try {
    boost::asio::io_context io;
    boost::asio::ip::tcp::resolver resolver(io);
    boost::beast::tcp_stream stream(io);
    stream.expires_after(std::chrono::seconds(60));
    const size_t colon = address.rfind(':');
    stream.connect(resolver.resolve(address.substr(0, colon), address.substr(colon + 1)));
    http::request<http::empty_body> request(http::verb::get, "/metrics", 11);
    request.set(http::field::host, address);
    request.set(http::field::authorization, "Bearer " + token);
    http::write(stream, request);
    boost::beast::flat_buffer buffer;
    http::response_parser<http::string_body> parser;
    parser.body_limit(64 << 20);
    http::read(stream, buffer, parser);
    if (parser.get().result_int() != 200) {
      return absl::UnavailableError("HTTP " + std::to_string(parser.get().result_int()));
    }
    return parser.get().body();
  } catch (const std::exception& e) {
    return absl::UnavailableError(e.what());
  }
}

}  // namespace

int RunCostsBench(const CostsOptions& options) {
  std::string dir = options.dir;
  if (dir.empty()) {
    std::string tmpl = (fs::temp_directory_path() / "onset-costs-XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) return 1;
    dir = tmpl;
  }
  OnsetdOptions onsetd_options;
  onsetd_options.binary = (fs::path(options.bin_dir) / "onsetd").string();
  onsetd_options.dir = dir;
  const std::string metrics_file = (fs::path(dir) / "metrics-addr").string();
  onsetd_options.flags = {"--metrics-listen", "127.0.0.1:0", "--metrics-address-file",
                          metrics_file};
  auto onsetd = OnsetdProcess::Start(onsetd_options);
  if (!onsetd.ok()) {
    std::fprintf(stderr, "%s\n", onsetd.status().ToString().c_str());
    return 1;
  }
  OnsetdProcess& daemon = **onsetd;
  cli::StudyClient client(daemon.address(), daemon.security(), std::chrono::seconds(600));
  int errors = 0;
  auto fail = [&](const char* what, const absl::Status& status) {
    std::fprintf(stderr, "%s: %s\n", what, status.ToString().c_str());
    ++errors;
  };

  if (auto s = client.Submit("heartbeats.yaml", SeedsStudy("heartbeats", Heartbeats::kWorkers));
      !s.ok()) {
    fail("submit heartbeats", s.status());
    return 1;
  }
  Heartbeats heartbeats(daemon.address(), daemon.security());
  if (!heartbeats.Start()) {
    std::fprintf(stderr, "the heartbeat workers did not all get a cell\n");
    return 1;
  }
  std::printf("%-34s %10s  %-46s %s\n", "call", "took", "heartbeats meanwhile (4 workers, 100 ms)",
              "onsetd RSS now / peak");
  int phase = 0;
  auto report = [&](const std::string& what, double ms) {
    const ProcessSample sample = SampleProcess(daemon.pid());
    std::printf("%-34s %8.0f ms  %-46s %lld / %lld MiB\n", what.c_str(), ms,
                heartbeats.Summary(phase).c_str(), static_cast<long long>(sample.rss_kb / 1024),
                static_cast<long long>(sample.peak_rss_kb / 1024));
    std::fflush(stdout);
    heartbeats.Phase(++phase);
  };

  // 0. Nothing but the heartbeats, for two seconds: the baseline.
  std::this_thread::sleep_for(std::chrono::seconds(2));
  report("(nothing: the baseline)", 2000);

  // 1. A submission at the limit.
  const std::string big = SeedsStudy("big", options.cells);
  auto start = Clock::now();
  if (auto s = client.Submit("big.yaml", big); !s.ok()) fail("submit big", s.status());
  report("SubmitStudy " + std::to_string(options.cells) + " cells", Ms(Clock::now() - start));

  // 2. Dry runs of another file at the limit, all at once (onsetd admits two at a time).
  const std::string other = SeedsStudy("other", options.cells);
  start = Clock::now();
  {
    std::vector<std::thread> dry;
    std::atomic<int> dry_errors{0};
    for (int i = 0; i < options.dry_runs; ++i) {
      dry.emplace_back([&] {
        cli::StudyClient own(daemon.address(), daemon.security(), std::chrono::seconds(600));
        if (!own.Submit("other.yaml", other, "", /*dry_run=*/true).ok()) ++dry_errors;
      });
    }
    for (std::thread& t : dry) t.join();
    errors += dry_errors;
  }
  report(std::to_string(options.dry_runs) + " dry runs at once", Ms(Clock::now() - start));

  // 3. `onset logs CELL` by a prefix, in any study, twenty times.
  auto cells = client.Get("heartbeats");
  if (!cells.ok() || cells->cells_size() == 0) {
    fail("get heartbeats", cells.status());
  } else {
    v1::ReadLogsRequest logs;
    logs.set_cell_id(cells->cells(0).id().substr(0, 6));
    Latencies each;
    start = Clock::now();
    for (int i = 0; i < 20; ++i) {
      const auto one = Clock::now();
      if (auto r = client.ReadLogs(logs); !r.ok()) fail("ReadLogs", r.status());
      each.Add(Ms(Clock::now() - one));
    }
    report("ReadLogs by prefix x20", Ms(Clock::now() - start));
    std::printf("  each: %s\n", each.Summary().c_str());
  }

  // 4. Cancel and rerun one named cell of the big study, twenty times.
  {
    auto page = client.Get("big");
    if (!page.ok() || page->cells_size() == 0) {
      fail("get big", page.status());
    } else {
      const std::string id = page->cells(page->cells_size() / 2).id();
      Latencies cancels, reruns;
      start = Clock::now();
      for (int i = 0; i < 20; ++i) {
        auto one = Clock::now();
        if (auto r = client.Cancel("big", {id}); !r.ok()) fail("CancelCells", r.status());
        cancels.Add(Ms(Clock::now() - one));
        one = Clock::now();
        if (auto r = client.Rerun("big", {}, {}, {id}, false); !r.ok()) {
          fail("RerunCells", r.status());
        }
        reruns.Add(Ms(Clock::now() - one));
      }
      report("CancelCells+RerunCells 1 id x20", Ms(Clock::now() - start));
      std::printf("  cancel: %s\n  rerun:  %s\n", cancels.Summary().c_str(),
                  reruns.Summary().c_str());
    }
  }

  // 4b. The whole big study cancelled, then queued again, as `onset cancel big` and `onset
  // rerun big --state cancelled` do (with the CLI's 30 s deadline).
  {
    start = Clock::now();
    if (auto r = client.Cancel("big", {}); !r.ok()) fail("CancelCells of the study", r.status());
    report("CancelCells of the whole study", Ms(Clock::now() - start));
    start = Clock::now();
    if (auto r = client.Rerun("big", {v1::CELL_STATE_CANCELLED}, {}, {}, false); !r.ok()) {
      fail("RerunCells of the study", r.status());
    }
    report("RerunCells of the whole study", Ms(Clock::now() - start));
  }

  // 5. Workers that name 1,024 devices each, registered eight at a time, then listed.
  start = Clock::now();
  {
    std::vector<std::string> devices;
    for (int d = 0; d < 1024; ++d) devices.push_back("cuda:" + std::to_string(d));
    std::atomic<int> next{0}, register_errors{0};
    std::vector<std::thread> registrars;
    for (int t = 0; t < 8; ++t) {
      registrars.emplace_back([&] {
        auto c = worker::NewGrpcCoordinatorClient(daemon.address(), daemon.security());
        for (int w; (w = next++) < options.big_workers;) {
          if (!c->Register("big-" + std::to_string(w), devices, "bench", "").ok()) {
            ++register_errors;
          }
        }
      });
    }
    for (std::thread& t : registrars) t.join();
    errors += register_errors;
  }
  report("RegisterWorker " + std::to_string(options.big_workers) + " x 1,024 devices",
         Ms(Clock::now() - start));
  start = Clock::now();
  auto first = client.Workers(false);
  if (!first.ok()) fail("ListWorkers", first.status());
  report("ListWorkers, first page", Ms(Clock::now() - start));
  start = Clock::now();
  int listed = 0, pages = 0;
  for (std::string token;; ++pages) {
    auto page = client.Workers(false, token, 1000);
    if (!page.ok()) {
      fail("ListWorkers", page.status());
      break;
    }
    listed += page->workers_size();
    token = page->next_page_token();
    if (token.empty()) break;
  }
  report("ListWorkers, all (" + std::to_string(listed) + " in " + std::to_string(pages + 1) +
             " pages)",
         Ms(Clock::now() - start));

  // 6. An online backup of the database as it now stands, through the Backup call (what `onset
  // backup` and --backup-every do), the copy discarded.
  {
    int64_t received = 0;
    start = Clock::now();
    const absl::Status backed_up = client.Backup([&](const v1::BackupChunk& chunk) {
      received += static_cast<int64_t>(chunk.data().size());
      return absl::OkStatus();
    });
    if (!backed_up.ok()) fail("Backup", backed_up);
    report("Backup (" + std::to_string(received >> 20) + " MiB)", Ms(Clock::now() - start));
  }

  // 7. Scrapes of /metrics with every study and worker above, twenty times one second apart
  // (a page younger than a second is served again, so each is read anew).
  {
    std::ifstream in(metrics_file);
    std::string address;
    std::getline(in, address);
    Latencies scrapes;
    size_t bytes = 0;
    start = Clock::now();
    for (int i = 0; i < 20 && !address.empty(); ++i) {
      if (i > 0) std::this_thread::sleep_for(std::chrono::milliseconds(1000));
      const auto one = Clock::now();
      absl::StatusOr<std::string> page = GetMetrics(address, daemon.security().token);
      if (!page.ok()) {
        fail("GET /metrics", page.status());
        break;
      }
      bytes = page->size();
      scrapes.Add(Ms(Clock::now() - one));
    }
    report("GET /metrics x20, 1 s apart", Ms(Clock::now() - start));
    std::printf("  each: %s; %zu bytes\n", scrapes.Summary().c_str(), bytes);
  }

  heartbeats.Stop();
  const bool alive = daemon.Alive();
  const bool clean = daemon.Stop();
  std::printf(
      "heartbeats that failed %d; onsetd alive at the end: %s, stopped cleanly: %s; "
      "errors %d\n",
      heartbeats.failed(), alive ? "yes" : "NO", clean ? "yes" : "NO", errors);
  const bool ok = errors == 0 && heartbeats.failed() == 0 && alive && clean;
  if (options.dir.empty() && ok) fs::remove_all(dir);
  if (!ok) std::printf("kept %s (onsetd.log)\n", dir.c_str());
  return ok ? 0 : 1;
}

}  // namespace onset::bench
