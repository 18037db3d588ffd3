#include "tests/sim/simulation.h"

#include <signal.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <map>
#include <thread>

#include "cli/client/study_client.h"
#include "tests/sim/cluster.h"

namespace onset::sim {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr int64_t kStepTokens = 1024;

int64_t WallMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// A study of `cells` cells (seeds of one tiny model) of `steps` steps each, with a checkpoint
// every 4 steps. The scripted trainer reads train.tokens, batch_tokens and
// checkpoint_every_tokens; onsetd checks the rest as for any study.
std::string StudyFile(const std::string& name, int cells, int steps) {
  return "name: " + name +
         "\n"
         "model: {layers: 2, d_model: 32, heads: 2, seq_len: 64}\n"
         "train: {batch_tokens: " +
         std::to_string(kStepTokens) + ", micro_batch: 16, log_every_steps: 1, " +
         "checkpoint_every_tokens: " + std::to_string(4 * kStepTokens) +
         "}\n"
         "eval: {every_tokens: " +
         std::to_string(steps * kStepTokens) +
         ", heldout_seqs: 2, niah_lengths: [64], niah_samples: 1}\n"
         "grid:\n  arch: [full]\n  tokens: [" +
         std::to_string(steps * kStepTokens) + "]\n  seeds: " + std::to_string(cells) + "\n";
}

bool Ended(const v1::Cell& c) {
  return c.state() == v1::CELL_STATE_SUCCEEDED || c.state() == v1::CELL_STATE_FAILED ||
         c.state() == v1::CELL_STATE_DIVERGED || c.state() == v1::CELL_STATE_CANCELLED;
}

class Run {
 public:
  explicit Run(const SimOptions& options) : options_(options), cluster_(Config(options)) {}

  SimReport Go() {
    const auto t0 = Clock::now();
    report_.seed = options_.seed;
    report_.dir = options_.dir;
    std::string why;
    if (!cluster_.Start(&why)) return Fail("the cluster did not start: " + why);
    client_ = std::make_unique<cli::StudyClient>(
        cluster_.address(), common::ClientSecurity{cluster_.token(), ""}, std::chrono::seconds(5));
    absl::StatusOr<v1::SubmitStudyResponse> submitted =
        client_->Submit("sim.yaml", StudyFile("sim", options_.cells, options_.steps));
    if (!submitted.ok()) return Fail("submit: " + submitted.status().ToString());
    for (const v1::Cell& c : submitted->cells()) cells_.push_back(c.id());
    studies_ = {"sim"};

    ScheduleOptions schedule_options;
    schedule_options.faults_ms = options_.faults.count();
    schedule_options.cells = options_.cells;
    schedule_options.workers = options_.workers;
    schedule_options.full_disk = options_.full_disk;
    const std::vector<Action> schedule = DrawSchedule(options_.seed, schedule_options);
    RunFaults(schedule);
    cluster_.Restore();
    Settle();
    cluster_.Stop();

    CheckInput input;
    input.db = cluster_.Db();
    input.journal_dir = cluster_.JournalDir();
    input.step_tokens = kStepTokens;
    input.fresh_reruns = fresh_reruns_;
    report_.violations = CheckInvariants(input, &report_.counts);
    report_.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    return report_;
  }

 private:
  static ClusterConfig Config(const SimOptions& o) {
    ClusterConfig c;
    c.bin_dir = o.bin_dir;
    c.dir = o.dir;
    c.workers = o.workers;
    c.step_ms = o.step_ms;
    c.crash_permille = o.crash_permille;
    return c;
  }

  SimReport Fail(const std::string& why) {
    report_.violations.push_back(why);
    return report_;
  }

  void Say(const std::string& line) { report_.schedule.push_back(line); }

  // Runs the schedule; what an action starts (a partition, a stopped process) is undone by a
  // later event of its own.
  void RunFaults(const std::vector<Action>& schedule) {
    const auto start = Clock::now();
    std::multimap<int64_t, std::function<void()>> later;  // ms from start -> what to do
    size_t next = 0;
    const int64_t end = options_.faults.count();
    while (true) {
      const int64_t now =
          std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
      while (!later.empty() && later.begin()->first <= now) {
        auto undo = later.begin()->second;
        later.erase(later.begin());
        undo();
      }
      if (next < schedule.size() && schedule[next].at_ms <= now) {
        Do(schedule[next], now, &later);
        ++next;
        continue;
      }
      if (next >= schedule.size() && now >= end) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    // Whatever is still undone is undone by Restore().
  }

  void Do(const Action& a, int64_t now, std::multimap<int64_t, std::function<void()>>* later) {
    std::string said = a.Describe();
    const std::string cell = cells_[a.cell % cells_.size()];
    switch (a.kind) {
      case ActionKind::kCancel: {
        absl::StatusOr<v1::CancelCellsResponse> r = client_->Cancel("sim", {cell});
        said += r.ok() ? ": " + std::to_string(r->cancelled()) + " cancelled"
                       : ": " + r.status().ToString();
        break;
      }
      case ActionKind::kRerun:
      case ActionKind::kCancelThenRerun:
      case ActionKind::kRerunRunning: {
        if (a.kind == ActionKind::kCancelThenRerun) {
          absl::StatusOr<v1::CancelCellsResponse> c = client_->Cancel("sim", {cell});
          said += c.ok() ? ": " + std::to_string(c->cancelled()) + " cancelled"
                         : ": cancel: " + c.status().ToString();
        }
        std::vector<v1::CellState> states;
        if (a.kind == ActionKind::kRerunRunning) states = {v1::CELL_STATE_RUNNING};
        // A plain rerun takes succeeded cells too, so that work keeps coming.
        if (a.kind == ActionKind::kRerun) {
          states = {v1::CELL_STATE_FAILED, v1::CELL_STATE_CANCELLED, v1::CELL_STATE_SUCCEEDED};
        }
        const int64_t sent = WallMs();
        absl::StatusOr<v1::RerunCellsResponse> r =
            client_->Rerun("sim", states, {}, {cell}, a.fresh);
        said += r.ok() ? ", " + std::to_string(r->queued()) + " queued"
                       : ", rerun: " + r.status().ToString();
        if (a.fresh && r.ok() && r->queued() > 0) fresh_reruns_[cell] = sent;
        break;
      }
      case ActionKind::kSignalWorker: {
        if (!cluster_.WorkerRuns(a.worker)) {
          said += ": not running";
          break;
        }
        cluster_.SignalWorker(a.worker, a.signal);
        const int w = a.worker;
        later->emplace(now + a.duration_ms, [this, w] {
          // One stopping cleanly hands its cells back first.
          cluster_.WaitWorker(w, std::chrono::seconds(15));
          cluster_.StartWorker(w);
        });
        break;
      }
      case ActionKind::kSignalDaemon: {
        if (!cluster_.DaemonRuns()) {
          said += ": not running";
          break;
        }
        cluster_.SignalDaemon(a.signal);
        later->emplace(now + a.duration_ms, [this] {
          std::string why;
          if (!cluster_.StartDaemon(&why)) Say("onsetd did not start again: " + why);
        });
        break;
      }
      case ActionKind::kPartition: {
        cluster_.Cut(a.worker);
        const int w = a.worker;
        later->emplace(now + a.duration_ms, [this, w] { cluster_.Heal(w); });
        break;
      }
      case ActionKind::kSlowReplies: {
        cluster_.DelayReplies(a.worker, a.delay_ms);
        const int w = a.worker;
        later->emplace(now + a.duration_ms, [this, w] { cluster_.Heal(w); });
        break;
      }
      case ActionKind::kDiskFull: {
        cluster_.SetDiskFull(true);
        later->emplace(now + a.duration_ms, [this] { cluster_.SetDiskFull(false); });
        break;
      }
      case ActionKind::kSubmit: {
        absl::StatusOr<v1::SubmitStudyResponse> r =
            client_->Submit("sim2.yaml", StudyFile("sim2", 2, options_.steps));
        said += r.ok() ? ": " + std::to_string(r->cells_added()) + " cells"
                       : ": " + r.status().ToString();
        if (r.ok()) studies_.push_back("sim2");
        break;
      }
    }
    Say(said);
  }

  // Waits until every cell of every study has ended, or the settle time is up.
  void Settle() {
    const auto deadline = Clock::now() + options_.settle;
    while (Clock::now() < deadline) {
      bool all = true;
      for (const std::string& study : studies_) {
        absl::StatusOr<v1::GetStudyResponse> s = client_->Get(study);
        if (!s.ok()) {
          all = false;
          break;
        }
        for (const v1::Cell& c : s->cells()) all = all && Ended(c);
      }
      if (all) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  }

  const SimOptions options_;
  Cluster cluster_;
  std::unique_ptr<cli::StudyClient> client_;
  std::vector<std::string> cells_;
  std::vector<std::string> studies_;
  std::map<std::string, int64_t> fresh_reruns_;
  SimReport report_;
};

}  // namespace

std::string SimReport::Describe() const {
  char head[256];
  std::snprintf(head, sizeof head,
                "seed %u: %s in %.0f s: %d succeeded, %d cancelled, %d failed, %d unfinished; "
                "%d attempts, %d trainers started",
                seed, ok() ? "ok" : "FAILED", seconds, counts.succeeded, counts.cancelled,
                counts.failed, counts.unfinished, counts.attempts, counts.trainers);
  std::string text = head;
  if (ok()) return text + "\n";
  text += "\n  schedule:\n";
  for (const std::string& line : schedule) text += "    " + line + "\n";
  text += "  violations:\n";
  for (const std::string& line : violations) text += "    " + line + "\n";
  if (!dir.empty()) text += "  files kept in " + dir + "\n";
  return text;
}

SimReport RunSimulation(const SimOptions& options) {
  SimReport report;
  {
    Run run(options);
    report = run.Go();
  }
  if (report.ok() && !options.keep_dir) {
    std::error_code ec;
    fs::remove_all(options.dir, ec);
    report.dir.clear();
  }
  return report;
}

}  // namespace onset::sim
