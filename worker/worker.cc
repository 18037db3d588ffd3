#include "worker/worker.h"

#include <unistd.h>

#include <algorithm>
#include <utility>

#include <spdlog/spdlog.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/posix_io.h"
#include "worker/devices.h"
#include "worker/idle_timer.h"

namespace onset::worker {
namespace {

constexpr char kVersion[] = "0.1.0";
constexpr std::chrono::milliseconds kInitialBackoff{500};
// How long a worker that exits waits for the coordinator to take note (DeregisterWorker).
constexpr std::chrono::milliseconds kDeregisterTimeout{3000};

// The coordinator refuses the token: no retry can succeed.
bool IsRefused(const absl::Status& status) {
  return absl::IsUnauthenticated(status) || absl::IsPermissionDenied(status);
}

}  // namespace

absl::Status WorkerConfig::Validate() const {
  if (coordinator.empty()) return absl::InvalidArgumentError("coordinator: must not be empty");
  if (trainer_path.empty()) return absl::InvalidArgumentError("trainer_path: must not be empty");
  if (access(trainer_path.c_str(), X_OK) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("trainer_path: ", trainer_path, " is not an executable file"));
  }
  if (work_dir.empty()) return absl::InvalidArgumentError("work_dir: must not be empty");
  if (absl::Status s = CheckDevices(devices); !s.ok()) return s;
  if (threads_per_job < 1) return absl::InvalidArgumentError("threads_per_job: must be at least 1");
  if (poll_interval.count() <= 0) {
    return absl::InvalidArgumentError("poll_interval: must be positive");
  }
  if (max_backoff < kInitialBackoff) {
    return absl::InvalidArgumentError("max_backoff: must be at least 500ms");
  }
  if (terminate_grace.count() < 0) {
    return absl::InvalidArgumentError("terminate_grace: must not be negative");
  }
  if (flush_interval.count() <= 0) {
    return absl::InvalidArgumentError("flush_interval: must be positive");
  }
  if (exit_when_idle && (exit_when_idle->count() <= 0 || *exit_when_idle > kMaxExitWhenIdle)) {
    return absl::InvalidArgumentError(
        absl::StrCat("exit_when_idle: must be more than 0 and at most 7 days, got ",
                     exit_when_idle->count(), " ms"));
  }
  return absl::OkStatus();
}

Worker::Worker(WorkerConfig config, CoordinatorClient* client, ProcessLauncher* launcher,
               const common::Clock& clock)
    : config_(std::move(config)), client_(client), launcher_(launcher), clock_(clock) {}

// Run() joins every job thread before it returns, so nothing is left to clean up here.
Worker::~Worker() = default;

void Worker::Stop() {
  common::MutexLock lock(&mu_);
  stop_ = true;
  cv_.notify_all();
}

int Worker::running_jobs() const {
  common::MutexLock lock(&mu_);
  return static_cast<int>(slots_.size());
}

std::vector<std::string> Worker::FreeDevices() const {
  common::MutexLock lock(&mu_);
  std::vector<std::string> free;
  for (const std::string& device : config_.devices) {
    const bool used = std::any_of(slots_.begin(), slots_.end(), [&](const Slot& s) {
      return std::find(s.devices.begin(), s.devices.end(), device) != s.devices.end();
    });
    if (!used) free.push_back(device);
  }
  return free;
}

bool Worker::AnyJobDone() const {
  for (const Slot& slot : slots_) {
    if (slot.done) return true;
  }
  return false;
}

bool Worker::WaitFor(std::chrono::milliseconds delay) {
  common::MutexLock lock(&mu_);
  const auto deadline = std::chrono::steady_clock::now() + delay;
  while (!stop_ && !AnyJobDone() && cv_.wait_until(mu_, deadline) == std::cv_status::no_timeout) {
  }
  return !stop_;
}

bool Worker::Register() {
  const std::string host = config_.host.empty() ? base::HostName("unknown") : config_.host;
  std::chrono::milliseconds backoff = kInitialBackoff;
  while (true) {
    absl::StatusOr<Registration> r =
        client_->Register(host, config_.devices, kVersion, config_.slurm_job);
    if (r.ok()) {
      worker_id_ = r->worker_id;
      heartbeat_interval_ = r->heartbeat_interval;
      lease_ttl_ = r->lease_ttl;
      spdlog::info("registered with {} as worker {} (devices {}, heartbeat every {} ms{})",
                   config_.coordinator, worker_id_, absl::StrJoin(config_.devices, ","),
                   heartbeat_interval_.count(),
                   config_.slurm_job.empty() ? "" : ", Slurm job " + config_.slurm_job);
      return true;
    }
    if (IsRefused(r.status())) {
      refused_ = r.status();
      return false;
    }
    if (idle_ && idle_->Unreachable(running_jobs())) {
      refused_ = GaveUp(r.status());
      return false;
    }
    spdlog::warn("registration failed, retrying in {} ms: {}", backoff.count(),
                 r.status().ToString());
    if (!WaitFor(backoff)) return false;
    backoff = std::min(backoff * 2, config_.max_backoff);
  }
}

void Worker::StartJob(JobSpec job, const std::vector<std::string>& free) {
  // A coordinator that names no devices hands out one-device jobs.
  if (job.devices.empty()) job.devices = {free.front()};
  for (const std::string& device : job.devices) {
    if (std::find(free.begin(), free.end(), device) != free.end()) continue;
    // Running it would share a device with another job (or use one this worker lacks).
    JobResult result;
    result.outcome = JobOutcome::kFailed;
    result.reason = absl::StrCat("the coordinator gave devices ", absl::StrJoin(job.devices, ","),
                                 " but only ", absl::StrJoin(free, ","), " are free");
    spdlog::error("cell {} attempt {}: {}", job.cell_id, job.attempt, result.reason);
    if (absl::Status s = client_->Finish(worker_id_, job.lease_id, result); !s.ok()) {
      spdlog::error("cell {} attempt {}: could not report it: {}", job.cell_id, job.attempt,
                    s.ToString());
    }
    return;
  }
  JobRunnerConfig rc;
  rc.trainer_path = config_.trainer_path;
  rc.work_dir = config_.work_dir;
  rc.checkpoint_root = config_.checkpoint_root;
  rc.threads = config_.threads_per_job;
  rc.heartbeat_interval = heartbeat_interval_;
  rc.lease_ttl = lease_ttl_;
  rc.stall_timeout = config_.stall_timeout;
  rc.flush_interval = config_.flush_interval;
  rc.terminate_grace = config_.terminate_grace;
  rc.report_stopped = config_.report_stopped;
  spdlog::info("leased cell {} of study {} (attempt {}, {} tokens, on {})", job.cell_id, job.study,
               job.attempt, job.tokens_budget, absl::StrJoin(job.devices, ","));

  common::MutexLock lock(&mu_);
  Slot& slot = slots_.emplace_back();
  slot.devices = job.devices;
  slot.runner = std::make_unique<JobRunner>(std::move(rc), worker_id_, std::move(job), client_,
                                            launcher_, clock_);
  slot.thread = std::thread([this, &slot] {
    slot.runner->Run();
    common::MutexLock lock(&mu_);
    slot.done = true;
    cv_.notify_all();
  });
}

void Worker::ReapFinished() {
  std::list<Slot> finished;
  {
    common::MutexLock lock(&mu_);
    for (auto it = slots_.begin(); it != slots_.end();) {
      auto next = std::next(it);
      if (it->done) finished.splice(finished.end(), slots_, it);
      it = next;
    }
  }
  for (Slot& slot : finished) slot.thread.join();
}

absl::Status Worker::GaveUp(const absl::Status& last) const {
  const double seconds = std::chrono::duration<double>(idle_->limit()).count();
  spdlog::error("could not reach the coordinator at {} for {:g} s with nothing to run: exiting",
                config_.coordinator, seconds);
  return absl::UnavailableError(absl::StrCat("could not reach the coordinator at ",
                                             config_.coordinator, " for ", seconds,
                                             " s (--exit-when-idle): ", last.message()));
}

absl::Status Worker::Run() {
  if (absl::Status s = config_.Validate(); !s.ok()) return s;
  // Only a worker told to exit when idle watches the time; work resets it.
  if (config_.exit_when_idle) idle_.emplace(*config_.exit_when_idle, clock_);
  if (!Register()) return refused_;

  std::chrono::milliseconds backoff = kInitialBackoff;
  std::optional<IdleTimer>& idle = idle_;
  while (true) {
    ReapFinished();
    const std::vector<std::string> free = FreeDevices();
    if (free.empty()) {
      if (idle) idle->Reset();  // every device runs a job
      if (!WaitFor(config_.poll_interval)) break;
      continue;
    }
    {
      common::MutexLock lock(&mu_);
      if (stop_) break;
    }
    // The lease's clock starts now on this side (the coordinator's starts at the claim, later),
    // and a reply that comes after half the TTL is not waited for: too little of it would be
    // left to start the trainer.
    const common::Clock::MonotonicTime asked_at = clock_.MonotonicNow();
    absl::StatusOr<LeaseReply> lease = client_->Lease(worker_id_, free, lease_ttl_ / 2);
    if (lease.ok()) {
      backoff = kInitialBackoff;
      if (lease->job) {
        if (idle) idle->Reset();
        lease->job->asked_at = asked_at;
        StartJob(std::move(*lease->job), free);
        continue;  // fill the other free devices at once
      }
      if (idle && idle->NoJob(running_jobs(), lease->queued_waiting)) {
        spdlog::info("no work for {:g} s: exiting",
                     std::chrono::duration<double>(idle->limit()).count());
        break;
      }
      if (!WaitFor(config_.poll_interval)) break;
      continue;
    }
    if (IsRefused(lease.status())) {
      refused_ = lease.status();
      break;
    }
    const absl::StatusCode code = lease.status().code();
    if (code == absl::StatusCode::kFailedPrecondition || code == absl::StatusCode::kNotFound) {
      // The coordinator does not know this worker (e.g. it lost its state): register again.
      spdlog::warn("lease refused, registering again: {}", lease.status().ToString());
      if (!Register()) break;
      continue;
    }
    // Time the coordinator cannot be asked while nothing runs here counts as time without work.
    if (idle && idle->Unreachable(running_jobs())) {
      refused_ = GaveUp(lease.status());
      break;
    }
    spdlog::warn("leasing failed, retrying in {} ms: {}", backoff.count(),
                 lease.status().ToString());
    if (!WaitFor(backoff)) break;
    backoff = std::min(backoff * 2, config_.max_backoff);
  }

  // Stopping: every runner terminates its trainer and reports "worker stopped".
  {
    common::MutexLock lock(&mu_);
    for (Slot& slot : slots_) slot.runner->Stop();
  }
  std::list<Slot> all;
  {
    common::MutexLock lock(&mu_);
    all.swap(slots_);
  }
  for (Slot& slot : all) slot.thread.join();
  // A clean exit leaves the coordinator's list of live workers; one that was refused or gave up
  // on an unreachable coordinator does not wait for another call.
  if (refused_.ok() && !worker_id_.empty()) {
    if (absl::Status s = client_->Deregister(worker_id_, kDeregisterTimeout); !s.ok()) {
      spdlog::warn("could not say this worker exits: {}", s.ToString());
    }
  }
  spdlog::info("worker stopped");
  return refused_;
}

}  // namespace onset::worker
