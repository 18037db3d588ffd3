#include "tests/sim/schedule.h"

#include <signal.h>
#include <string.h>

#include <cstdio>

namespace onset::sim {
namespace {

std::string Seconds(int64_t ms) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2fs", static_cast<double>(ms) / 1000);
  return buf;
}

std::string Sig(int signal) { return std::string("SIG") + sigabbrev_np(signal); }

}  // namespace

std::string Action::Describe() const {
  const std::string at = "+" + Seconds(at_ms) + " ";
  const std::string cell_name = "cell #" + std::to_string(cell);
  const std::string fresh_flag = fresh ? " --fresh" : "";
  switch (kind) {
    case ActionKind::kCancel:
      return at + "cancel " + cell_name;
    case ActionKind::kRerun:
      return at + "rerun" + fresh_flag + " " + cell_name;
    case ActionKind::kCancelThenRerun:
      return at + "cancel, then rerun" + fresh_flag + " " + cell_name;
    case ActionKind::kRerunRunning:
      return at + "rerun --state running" + fresh_flag + " " + cell_name;
    case ActionKind::kSignalWorker:
      return at + Sig(signal) + " worker " + std::to_string(worker) + " (started again after " +
             Seconds(duration_ms) + ")";
    case ActionKind::kSignalDaemon:
      return at + Sig(signal) + " onsetd (started again after " + Seconds(duration_ms) + ")";
    case ActionKind::kPartition:
      return at + "cut worker " + std::to_string(worker) + " off for " + Seconds(duration_ms);
    case ActionKind::kSlowReplies:
      return at + "replies to worker " + std::to_string(worker) + " late by " +
             std::to_string(delay_ms) + " ms for " + Seconds(duration_ms);
    case ActionKind::kDiskFull:
      return at + "onsetd's disk full for " + Seconds(duration_ms);
    case ActionKind::kSubmit:
      return at + "submit a second study";
  }
  return at + "?";
}

std::vector<Action> DrawSchedule(uint32_t seed, const ScheduleOptions& options) {
  std::mt19937 random(seed);
  auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(random);
  };
  std::vector<Action> schedule;
  bool submitted = false;
  for (int64_t at = pick(300, 1500); at < options.faults_ms; at += pick(300, 1500)) {
    Action a;
    a.at_ms = at;
    a.cell = static_cast<int>(pick(0, options.cells - 1));
    a.worker = static_cast<int>(pick(0, options.workers - 1));
    a.fresh = pick(0, 2) == 0;
    // Weights: what users do most, then what machines do.
    const int64_t roll = pick(0, 99);
    if (roll < 12) {
      a.kind = ActionKind::kCancel;
    } else if (roll < 24) {
      a.kind = ActionKind::kRerun;
    } else if (roll < 36) {
      a.kind = ActionKind::kCancelThenRerun;
    } else if (roll < 44) {
      a.kind = ActionKind::kRerunRunning;
    } else if (roll < 60) {
      a.kind = ActionKind::kSignalWorker;
      const int signals[] = {SIGKILL, SIGKILL, SIGTERM, SIGHUP};
      a.signal = signals[pick(0, 3)];
      a.duration_ms = pick(200, 3000);
    } else if (roll < 68) {
      a.kind = ActionKind::kSignalDaemon;
      a.signal = pick(0, 1) == 0 ? SIGKILL : SIGTERM;
      a.duration_ms = pick(200, 2000);
    } else if (roll < 80) {
      a.kind = ActionKind::kPartition;
      a.duration_ms = pick(500, 7000);
    } else if (roll < 90) {
      a.kind = ActionKind::kSlowReplies;
      a.delay_ms = static_cast<int>(pick(200, 6000));
      a.duration_ms = pick(1000, 8000);
    } else if (roll < 97 && options.full_disk) {
      a.kind = ActionKind::kDiskFull;
      a.duration_ms = pick(500, 5000);
    } else if (!submitted) {
      a.kind = ActionKind::kSubmit;
      submitted = true;
    } else {
      a.kind = ActionKind::kCancel;
    }
    schedule.push_back(a);
  }
  return schedule;
}

}  // namespace onset::sim
