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
    case ActionKind::kBackup:
      return at + "onset backup";
    case ActionKind::kBackupOverServed: {
      const char* what[] = {"the served database", "its -wal", "a hard link to it"};
      return at + "onset backup --out " + what[variant % 3];
    }
    case ActionKind::kRestore:
      return at + "restore backup choice " + std::to_string(choice) + " while workers run";
    case ActionKind::kServeRotated:
      return at + "restart onsetd on its newest rotating backup, where it lies";
    case ActionKind::kCancelStudy:
      return at + "cancel study choice " + std::to_string(choice);
    case ActionKind::kRerunStudy:
      return at + "rerun" + fresh_flag + " study choice " + std::to_string(choice);
    case ActionKind::kStallBackup:
      return at + "a Backup stream unread for " + Seconds(duration_ms);
    case ActionKind::kStallWatch:
      return at + "a WatchStudy stream unread for " + Seconds(duration_ms);
    case ActionKind::kStallDryRun:
      return at + "a SubmitStudy dry run unread for " + Seconds(duration_ms);
  }
  return at + "?";
}

const char* KindName(ActionKind kind) {
  switch (kind) {
    case ActionKind::kCancel:
      return "cancel";
    case ActionKind::kRerun:
      return "rerun";
    case ActionKind::kCancelThenRerun:
      return "cancel-then-rerun";
    case ActionKind::kRerunRunning:
      return "rerun-running";
    case ActionKind::kSignalWorker:
      return "signal-worker";
    case ActionKind::kSignalDaemon:
      return "signal-onsetd";
    case ActionKind::kPartition:
      return "partition";
    case ActionKind::kSlowReplies:
      return "slow-replies";
    case ActionKind::kDiskFull:
      return "disk-full";
    case ActionKind::kSubmit:
      return "submit";
    case ActionKind::kBackup:
      return "backup";
    case ActionKind::kBackupOverServed:
      return "backup-over-served";
    case ActionKind::kRestore:
      return "restore";
    case ActionKind::kServeRotated:
      return "serve-rotated";
    case ActionKind::kCancelStudy:
      return "cancel-study";
    case ActionKind::kRerunStudy:
      return "rerun-study";
    case ActionKind::kStallBackup:
      return "stall-backup";
    case ActionKind::kStallWatch:
      return "stall-watch";
    case ActionKind::kStallDryRun:
      return "stall-dry-run";
  }
  return "?";
}

std::string KindsOf(const std::vector<Action>& schedule) {
  std::vector<int> n(kActionKinds, 0);
  for (const Action& a : schedule) ++n[static_cast<int>(a.kind)];
  std::string text;
  for (int k = 0; k < kActionKinds; ++k) {
    if (n[k] == 0) continue;
    text += (text.empty() ? "" : ", ") + std::string(KindName(static_cast<ActionKind>(k))) + " x" +
            std::to_string(n[k]);
  }
  return text;
}

std::vector<Action> DrawSchedule(uint32_t seed, const ScheduleOptions& options) {
  std::mt19937 random(seed);
  auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(random);
  };
  // Weights out of 128: what users do most, then what machines do, then what operators do.
  struct Weight {
    ActionKind kind;
    int weight;
  };
  const Weight weights[] = {
      {ActionKind::kCancel, 12},          {ActionKind::kRerun, 12},
      {ActionKind::kCancelThenRerun, 12}, {ActionKind::kRerunRunning, 8},
      {ActionKind::kSignalWorker, 16},    {ActionKind::kSignalDaemon, 8},
      {ActionKind::kPartition, 12},       {ActionKind::kSlowReplies, 10},
      {ActionKind::kDiskFull, 7},         {ActionKind::kSubmit, 3},
      {ActionKind::kBackup, 8},           {ActionKind::kBackupOverServed, 3},
      {ActionKind::kRestore, 3},          {ActionKind::kServeRotated, 2},
      {ActionKind::kCancelStudy, 2},      {ActionKind::kRerunStudy, 3},
      {ActionKind::kStallBackup, 2},      {ActionKind::kStallWatch, 2},
      {ActionKind::kStallDryRun, 2},
  };
  int total = 0;
  for (const Weight& w : weights) total += w.weight;
  std::vector<Action> schedule;
  int submits = 0, restarts_on_backups = 0;
  bool backed_up = false;
  for (int64_t at = pick(300, 1500); at < options.faults_ms; at += pick(300, 1500)) {
    Action a;
    a.at_ms = at;
    a.cell = static_cast<int>(pick(0, options.cells - 1));
    a.worker = static_cast<int>(pick(0, options.workers - 1));
    a.fresh = pick(0, 2) == 0;
    a.variant = static_cast<int>(pick(0, 2));
    a.choice = static_cast<int>(pick(0, 99));
    int64_t roll = pick(0, total - 1);
    for (const Weight& w : weights) {
      if (roll < w.weight) {
        a.kind = w.kind;
        break;
      }
      roll -= w.weight;
    }
    switch (a.kind) {
      case ActionKind::kSignalWorker: {
        const int signals[] = {SIGKILL, SIGKILL, SIGTERM, SIGHUP};
        a.signal = signals[pick(0, 3)];
        a.duration_ms = pick(200, 3000);
        break;
      }
      case ActionKind::kSignalDaemon:
        a.signal = pick(0, 1) == 0 ? SIGKILL : SIGTERM;
        a.duration_ms = pick(200, 2000);
        break;
      case ActionKind::kPartition:
        a.duration_ms = pick(500, 7000);
        break;
      case ActionKind::kSlowReplies:
        a.delay_ms = static_cast<int>(pick(200, 6000));
        a.duration_ms = pick(1000, 8000);
        break;
      case ActionKind::kDiskFull:
        a.duration_ms = pick(500, 5000);
        if (!options.full_disk) a.kind = ActionKind::kCancel;
        break;
      case ActionKind::kSubmit:
        // A second submission of the study matters only after a restore lost the first.
        if (++submits > 2) a.kind = ActionKind::kCancel;
        break;
      case ActionKind::kRestore:
      case ActionKind::kServeRotated:
        if ((a.kind == ActionKind::kRestore && !backed_up) || restarts_on_backups == 2) {
          a.kind = ActionKind::kBackup;
        } else {
          ++restarts_on_backups;
        }
        break;
      case ActionKind::kStallBackup:
      case ActionKind::kStallWatch:
      case ActionKind::kStallDryRun:
        a.duration_ms = pick(5000, 7000);
        break;
      default:
        break;
    }
    backed_up = backed_up || a.kind == ActionKind::kBackup;
    schedule.push_back(a);
  }
  return schedule;
}

}  // namespace onset::sim
