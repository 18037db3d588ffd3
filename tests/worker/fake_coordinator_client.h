// An in-memory CoordinatorClient for the worker's tests: records every call and answers with
// what the test configured. Thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "worker/coordinator_client.h"

namespace onset::worker {

class FakeCoordinatorClient : public CoordinatorClient {
 public:
  struct Finished {
    std::string lease_id;
    JobResult result;
  };

  absl::StatusOr<Registration> Register(const std::string&, const std::vector<std::string>& devices,
                                        const std::string&, const std::string& slurm_job) override {
    std::lock_guard<std::mutex> lock(mu_);
    ++register_calls;
    cv_.notify_all();
    registered_devices = devices;
    registered_slurm_job = slurm_job;
    if (register_failures > 0) {
      --register_failures;
      return absl::UnavailableError("RegisterWorker to fake: connection refused");
    }
    if (!register_status.ok()) return register_status;
    Registration r;
    r.worker_id = "w1";
    r.heartbeat_interval = heartbeat_interval;
    r.lease_ttl = lease_ttl;
    return r;
  }

  // Hands out the first queued job when it fits, as the coordinator would: a job needs as many
  // devices as its `devices` lists and runs on the first of `free_devices` (the names it lists
  // are placeholders). Unless `keep_devices`, which hands the names out as they are. Without a
  // job the answer carries `queued_waiting`.
  absl::StatusOr<LeaseReply> Lease(const std::string&, const std::vector<std::string>& free_devices,
                                   std::chrono::milliseconds timeout) override {
    std::lock_guard<std::mutex> lock(mu_);
    ++lease_calls;
    lease_free_devices.push_back(free_devices);
    lease_timeouts.push_back(timeout);
    cv_.notify_all();
    if (!lease_status.ok()) return lease_status;
    LeaseReply none;
    none.queued_waiting = queued_waiting;
    if (jobs.empty()) return none;
    JobSpec job = jobs.front();
    if (job.devices.size() > free_devices.size()) return none;
    if (!keep_devices) {
      job.devices.assign(free_devices.begin(), free_devices.begin() + job.devices.size());
    }
    jobs.pop_front();
    LeaseReply reply;
    reply.job = std::move(job);
    return reply;
  }

  absl::StatusOr<HeartbeatReply> Heartbeat(const std::string&, const std::string&,
                                           const Progress& p,
                                           std::chrono::milliseconds timeout) override {
    std::lock_guard<std::mutex> lock(mu_);
    heartbeats.push_back(p);
    heartbeat_timeouts.push_back(timeout);
    calls.push_back("heartbeat");
    cv_.notify_all();
    if (!heartbeat_status.ok()) return heartbeat_status;
    return HeartbeatReply{cancel_cells};
  }

  absl::Status ReportMetrics(const std::string&, const std::string&,
                             const std::vector<MetricPoint>& points,
                             std::chrono::milliseconds timeout) override {
    std::lock_guard<std::mutex> lock(mu_);
    batches.push_back(points);
    report_timeouts.push_back(timeout);
    cv_.notify_all();
    if (report_failures > 0) {
      --report_failures;
      calls.push_back("report failed");
      return absl::UnavailableError("ReportMetrics to fake: connection refused");
    }
    calls.push_back(report_status.ok() ? "report" : "report refused");
    return report_status;
  }

  absl::Status Finish(const std::string&, const std::string& lease_id,
                      const JobResult& result) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (finish_failures > 0) {
      --finish_failures;
      calls.push_back("finish refused");
      cv_.notify_all();
      return finish_failure;
    }
    finished.push_back({lease_id, result});
    calls.push_back("finish");
    cv_.notify_all();
    return absl::OkStatus();
  }

  absl::Status AppendLogs(const std::string&, const std::string&, const std::vector<LogLine>& lines,
                          std::chrono::milliseconds timeout) override {
    std::lock_guard<std::mutex> lock(mu_);
    log_timeouts.push_back(timeout);
    if (!logs_status.ok()) return logs_status;
    size_t bytes = 0;
    for (const LogLine& line : lines) bytes += line.text.size();
    log_call_bytes.push_back(bytes);
    log_lines.insert(log_lines.end(), lines.begin(), lines.end());
    cv_.notify_all();
    return absl::OkStatus();
  }

  absl::Status Deregister(const std::string& worker_id, std::chrono::milliseconds) override {
    std::lock_guard<std::mutex> lock(mu_);
    deregistered.push_back(worker_id);
    return absl::OkStatus();
  }

  // Waits until `pred` (called under the lock) holds; false after `timeout`.
  bool WaitUntil(const std::function<bool()>& pred,
                 std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, timeout, pred);
  }

  template <typename F>
  auto Locked(F f) {
    std::lock_guard<std::mutex> lock(mu_);
    return f();
  }

  // Configuration and records; touch them under Locked() once the code under test runs.
  std::chrono::milliseconds heartbeat_interval{50};
  std::chrono::milliseconds lease_ttl{30'000};
  int register_failures = 0;
  absl::Status register_status;  // after the failures
  absl::Status lease_status;
  absl::Status heartbeat_status;
  bool cancel_cells = false;  // heartbeats answer "cancelled"
  absl::Status report_status;
  int report_failures = 0;  // before report_status: the first calls fail as unreachable
  absl::Status logs_status;
  int finish_failures = 0;  // the first Finish calls fail with finish_failure
  absl::Status finish_failure = absl::UnavailableError("FinishJob to fake: connection refused");
  std::deque<JobSpec> jobs;
  bool keep_devices = false;
  int queued_waiting = 0;  // what answers without a job say

  int register_calls = 0;
  std::vector<std::string> registered_devices;  // of the latest registration
  std::string registered_slurm_job;             // of the latest registration
  int lease_calls = 0;
  std::vector<std::vector<std::string>> lease_free_devices;  // per lease call
  std::vector<std::chrono::milliseconds> lease_timeouts;     // per lease call
  std::vector<Progress> heartbeats;
  std::vector<std::chrono::milliseconds> heartbeat_timeouts;  // as each call was bounded
  std::vector<std::vector<MetricPoint>> batches;
  std::vector<std::chrono::milliseconds> report_timeouts;  // as each ReportMetrics was bounded
  std::vector<std::chrono::milliseconds> log_timeouts;     // as each AppendLogs was bounded
  std::vector<Finished> finished;
  std::vector<LogLine> log_lines;         // every line accepted, in the order sent
  std::vector<size_t> log_call_bytes;     // the text each accepted AppendLogs call carried
  std::vector<std::string> deregistered;  // the worker ids of each Deregister call
  // "heartbeat", "report", "report failed", "report refused", "finish", in order.
  std::vector<std::string> calls;

 private:
  std::mutex mu_;
  std::condition_variable cv_;
};

}  // namespace onset::worker
