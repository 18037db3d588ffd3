#include "coordinator/monitoring/coordinator_metrics.h"

#include <sys/stat.h>
#include <sys/statvfs.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>
#include <vector>

#include "common/prometheus_text.h"
#include "coordinator/cells/cell_state.h"

namespace onset::coordinator {
namespace {

using common::MetricLabels;
using Type = common::PrometheusText::Type;

constexpr CellState kStates[] = {CellState::kQueued,    CellState::kRunning, CellState::kBackoff,
                                 CellState::kSucceeded, CellState::kFailed,  CellState::kDiverged,
                                 CellState::kCancelled};
constexpr char kOtherStudies[] = "_other";

bool InMemory(const std::string& path) {
  return path.empty() || path == ":memory:" || path.find("mode=memory") != std::string::npos;
}

std::optional<double> FileBytes(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return static_cast<double>(st.st_size);
}

bool Active(const StudyInfo& study) {
  for (const char* state : {"queued", "running", "backoff"}) {
    auto it = study.cells_by_state.find(state);
    if (it != study.cells_by_state.end() && it->second > 0) return true;
  }
  return false;
}

// Cells by state per study, the labelled studies chosen as the header says.
void WriteCells(const std::vector<StudyInfo>& studies, int max_studies,
                common::PrometheusText& page) {
  page.Family("onset_studies", Type::kGauge, "Studies the coordinator holds.");
  page.Sample("onset_studies", {}, static_cast<double>(studies.size()));

  std::vector<const StudyInfo*> order;
  for (const StudyInfo& s : studies) order.push_back(&s);
  // ListStudies is oldest first: the active studies first (oldest first), then the others
  // newest first.
  const auto idle = std::stable_partition(order.begin(), order.end(),
                                          [](const StudyInfo* s) { return Active(*s); });
  std::reverse(idle, order.end());
  std::map<std::string, double> other;
  page.Family("onset_cells", Type::kGauge,
              "Grid cells by study and state (trunks not counted). Past the labelled studies, "
              "the rest are summed under study=\"_other\".");
  for (size_t i = 0; i < order.size(); ++i) {
    const StudyInfo& study = *order[i];
    for (CellState state : kStates) {
      auto it = study.cells_by_state.find(CellStateName(state));
      const double count = it == study.cells_by_state.end() ? 0 : it->second;
      if (static_cast<int>(i) < max_studies) {
        page.Sample("onset_cells", {{"study", study.name}, {"state", CellStateName(state)}}, count);
      } else {
        other[CellStateName(state)] += count;
      }
    }
  }
  if (static_cast<int>(order.size()) > max_studies) {
    for (CellState state : kStates) {
      page.Sample("onset_cells", {{"study", kOtherStudies}, {"state", CellStateName(state)}},
                  other[CellStateName(state)]);
    }
  }
}

void WriteRpcs(const RpcMetrics& rpcs, common::PrometheusText& page) {
  const std::vector<RpcMetrics::Method> methods = rpcs.Read();
  page.Family("onset_rpc_calls_total", Type::kCounter,
              "gRPC calls answered, by service, method and status code.");
  for (const RpcMetrics::Method& m : methods) {
    for (int code = 0; code < RpcMetrics::kCodes; ++code) {
      const uint64_t n = m.calls[static_cast<size_t>(code)];
      if (n == 0 && code != 0) continue;  // OK always, other codes once seen
      page.Sample("onset_rpc_calls_total",
                  {{"service", m.service}, {"method", m.method}, {"code", GrpcCodeName(code)}},
                  static_cast<double>(n));
    }
  }
  page.Family("onset_rpc_duration_seconds", Type::kHistogram,
              "Time from a call's arrival to its status, by service and method (a stream's "
              "whole life for streaming calls).");
  for (const RpcMetrics::Method& m : methods) {
    page.Histogram("onset_rpc_duration_seconds", {{"service", m.service}, {"method", m.method}},
                   m.seconds);
  }
}

}  // namespace

CoordinatorMetrics::CoordinatorMetrics(MetricsSources sources)
    : sources_(std::move(sources)),
      started_unix_ms_(sources_.clock->WallUnixMs()),
      started_(sources_.clock->MonotonicNow()) {}

std::string CoordinatorMetrics::Render() const {
  common::PrometheusText page;
  page.Family("onset_build_info", Type::kGauge, "Always 1; the version of onsetd in a label.");
  page.Sample("onset_build_info", {{"version", sources_.version}}, 1);
  page.Family("onset_start_time_seconds", Type::kGauge,
              "When this onsetd started, in seconds since the Unix epoch.");
  page.Sample("onset_start_time_seconds", {}, static_cast<double>(started_unix_ms_) / 1000);
  page.Family("onset_uptime_seconds", Type::kGauge, "Seconds since this onsetd started.");
  page.Sample("onset_uptime_seconds", {},
              std::chrono::duration<double>(sources_.clock->MonotonicNow() - started_).count());

  bool read_ok = true;
  absl::StatusOr<std::vector<StudyInfo>> studies = sources_.studies->ListStudies();
  if (studies.ok()) {
    WriteCells(*studies, sources_.max_studies, page);
  } else {
    read_ok = false;
  }
  WorkerQuery live;
  live.limit = 1;
  live.live_since_unix_ms = sources_.clock->WallUnixMs() - sources_.live_window.count();
  absl::StatusOr<WorkerPage> workers = sources_.workers->ListWorkers(live);
  if (workers.ok()) {
    page.Family("onset_workers_live", Type::kGauge,
                "Workers that have not exited and were heard from within the live window.");
    page.Sample("onset_workers_live", {}, static_cast<double>(workers->matching));
    page.Family("onset_workers_registered", Type::kGauge,
                "Workers the coordinator knows, live or not.");
    page.Sample("onset_workers_registered", {},
                static_cast<double>(workers->matching + workers->not_live));
  } else {
    read_ok = false;
  }
  page.Family("onset_store_read_ok", Type::kGauge,
              "1 when this scrape could read the database, 0 when cells or workers are missing "
              "from it because a read failed.");
  page.Sample("onset_store_read_ok", {}, read_ok ? 1 : 0);

  page.Family("onset_leases_open", Type::kGauge, "Leases held by workers now.");
  page.Sample("onset_leases_open", {}, static_cast<double>(sources_.open_leases()));
  page.Family("onset_lease_expiries_total", Type::kCounter,
              "Leases that expired (no heartbeat within the lease TTL) since onsetd started.");
  page.Sample("onset_lease_expiries_total", {}, static_cast<double>(sources_.expired_leases()));

  if (sources_.rpcs != nullptr) WriteRpcs(*sources_.rpcs, page);

  if (sources_.notifications) {
    const NotificationCounts n = sources_.notifications();
    page.Family("onset_notifications_sent_total", Type::kCounter,
                "Webhook notifications delivered (--notify-url-file), over every URL.");
    page.Sample("onset_notifications_sent_total", {}, static_cast<double>(n.sent));
    page.Family("onset_notification_failures_total", Type::kCounter,
                "Webhook POSTs that failed (each try of each URL).");
    page.Sample("onset_notification_failures_total", {}, static_cast<double>(n.failed_attempts));
    page.Family("onset_notifications_dropped_total", Type::kCounter,
                "Webhook notifications given up: out of tries, refused, or pushed out of a full "
                "queue.");
    page.Sample("onset_notifications_dropped_total", {}, static_cast<double>(n.dropped));
    page.Family("onset_notifications_queued", Type::kGauge,
                "Webhook notifications waiting to be sent, over every URL.");
    page.Sample("onset_notifications_queued", {}, static_cast<double>(n.queued));
  }

  const db::WriteQueue::Stats writer = sources_.writer();
  page.Family("onset_db_write_queue_depth", Type::kGauge,
              "Database writes waiting for the writer's next transaction.");
  page.Sample("onset_db_write_queue_depth", {}, static_cast<double>(writer.queued));
  page.Family("onset_db_commits_total", Type::kCounter,
              "Transactions the writer committed with changes since onsetd started.");
  page.Sample("onset_db_commits_total", {}, static_cast<double>(writer.commits));
  page.Family("onset_db_write_batch_duration_seconds", Type::kHistogram,
              "Time of one writer transaction, from BEGIN to the end of COMMIT; each holds the "
              "writes that queued while the previous one ran.");
  page.Histogram("onset_db_write_batch_duration_seconds", {}, writer.batch_seconds);

  if (!InMemory(sources_.db_path)) {
    if (std::optional<double> bytes = FileBytes(sources_.db_path)) {
      page.Family("onset_db_size_bytes", Type::kGauge, "Size of the database file.");
      page.Sample("onset_db_size_bytes", {}, *bytes);
    }
    page.Family("onset_db_wal_size_bytes", Type::kGauge,
                "Size of the database's write-ahead log (0 when there is none).");
    page.Sample("onset_db_wal_size_bytes", {}, FileBytes(sources_.db_path + "-wal").value_or(0));
    std::filesystem::path dir = std::filesystem::path(sources_.db_path).parent_path();
    if (dir.empty()) dir = ".";
    struct statvfs fs;
    if (::statvfs(dir.c_str(), &fs) == 0) {
      page.Family("onset_disk_free_bytes", Type::kGauge,
                  "Space left to onsetd on the database's file system.");
      page.Sample("onset_disk_free_bytes", {},
                  static_cast<double>(fs.f_bavail) * static_cast<double>(fs.f_frsize));
      page.Family("onset_disk_size_bytes", Type::kGauge, "Size of the database's file system.");
      page.Sample("onset_disk_size_bytes", {},
                  static_cast<double>(fs.f_blocks) * static_cast<double>(fs.f_frsize));
    }
  }
  return page.text();
}

}  // namespace onset::coordinator
