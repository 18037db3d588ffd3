#include "tests/sim/simulation.h"

#include <signal.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <map>
#include <set>
#include <thread>

#include "cli/client/study_client.h"
#include "tests/sim/cluster.h"
#include "tests/sim/db_reads.h"
#include "tests/sim/stalled_reader.h"
#include "tests/sim/study_files.h"

namespace onset::sim {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

int64_t WallMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

bool Ended(const v1::Cell& c) {
  return c.state() == v1::CELL_STATE_SUCCEEDED || c.state() == v1::CELL_STATE_FAILED ||
         c.state() == v1::CELL_STATE_DIVERGED || c.state() == v1::CELL_STATE_CANCELLED;
}

struct CellRef {
  std::string study;
  std::string id;
};

// When something was asked (unix ms): sent before, answered after.
struct Asked {
  int64_t sent = 0;
  int64_t done = 0;
};

// What the coordinator holds of what was asked of it that the checks depend on: the fresh
// reruns it accepted (by cell id) and the submissions of the second study. A restore takes it
// back to what its backup held.
struct Model {
  std::map<std::string, std::vector<Asked>> fresh;
  std::vector<Asked> second_study;
};

struct TakenBackup {
  std::string path;
  int64_t taken_unix_ms = 0;
  Model model;  // as it was when the backup was taken (nothing is asked while one is taken)
};

std::optional<std::pair<dev_t, ino_t>> Identity(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return std::make_pair(st.st_dev, st.st_ino);
}

class Run {
 public:
  explicit Run(const SimOptions& options)
      : options_(options),
        schedule_(DrawSchedule(options.seed, ScheduleFor(options))),
        cluster_(Config(options)) {}

  SimReport Go() {
    const auto t0 = Clock::now();
    report_.seed = options_.seed;
    report_.dir = options_.dir;
    report_.kinds = KindsOf(schedule_);
    std::string why;
    if (!cluster_.Start(&why)) return Fail("the cluster did not start: " + why);
    client_ = std::make_unique<cli::StudyClient>(
        cluster_.address(), common::ClientSecurity{cluster_.token(), ""}, std::chrono::seconds(5));
    if (!SetUp(&why)) return Fail(why);

    RunFaults();
    cluster_.Restore();
    Settle();
    CheckServedFile();
    for (size_t i = 0; i < stalls_.size(); ++i) CheckStall(stall_actions_[i], *stalls_[i]);
    cluster_.Stop();
    CheckServedFile();

    CheckInput input;
    input.db = cluster_.Db();
    input.journal_dir = cluster_.JournalDir();
    input.step_tokens = kStepTokens;
    for (const auto& [cell, asked] : model_.fresh) {
      for (const Asked& a : asked) {
        input.fresh_reruns[cell] = std::max(input.fresh_reruns[cell], a.sent);
      }
    }
    for (const std::string& study : Studies()) {
      for (const std::string& id : study_cells_[study]) input.expected_cells.push_back(id);
    }
    input.restores_unix_ms = restores_;
    input.checkpoint_root = cluster_.dir() + "/checkpoints";
    input.uncounted_studies = {kWide};
    std::vector<std::string> found = CheckInvariants(input, &report_.counts);
    report_.violations.insert(report_.violations.end(), found.begin(), found.end());
    report_.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    return report_;
  }

 private:
  static constexpr const char* kSim = "sim";
  static constexpr const char* kWsd = "wsd";
  static constexpr const char* kSecond = "sim2";
  // A study whose watch snapshot (some 125 bytes a cell, 2,000 cells a message) is several times
  // a stalled reader's window; cancelled at once, it only is to be read.
  static constexpr const char* kWide = "wide";
  static constexpr int kWideCells = 1500;

  static ClusterConfig Config(const SimOptions& o) {
    ClusterConfig c;
    c.bin_dir = o.bin_dir;
    c.dir = o.dir;
    c.workers = o.workers;
    c.step_ms = o.step_ms;
    c.crash_permille = o.crash_permille;
    c.backup_every_s = o.rotation ? 1 : 0;
    c.backup_keep = 2;
    c.stalled_reader_limit_ms = o.stalled_reader_limit_ms;
    return c;
  }

  bool Stalls() const { return options_.stalled_reader_limit_ms > 0; }

  // Submits the studies and notes their cells.
  bool SetUp(std::string* why) {
    auto submit = [&](const std::string& study, const std::string& yaml) {
      absl::StatusOr<v1::SubmitStudyResponse> r = client_->Submit(study + ".yaml", yaml);
      if (!r.ok()) {
        *why = "submit " + study + ": " + r.status().ToString();
        return false;
      }
      absl::StatusOr<v1::GetStudyResponse> s = client_->Get(study);  // trunks included
      if (!s.ok()) {
        *why = "get " + study + ": " + s.status().ToString();
        return false;
      }
      for (const v1::Cell& c : s->cells()) study_cells_[study].push_back(c.id());
      return true;
    };
    if (!submit(kSim, StudyFile(kSim, options_.cells, options_.steps))) return false;
    for (const std::string& id : study_cells_[kSim]) cells_.push_back({kSim, id});
    base_studies_ = {kSim};
    if (options_.wsd) {
      if (!submit(kWsd, WsdStudyFile(kWsd))) return false;
      for (const std::string& id : study_cells_[kWsd]) cells_.push_back({kWsd, id});
      base_studies_.push_back(kWsd);
    }
    const bool watches = std::any_of(schedule_.begin(), schedule_.end(), [](const Action& a) {
      return a.kind == ActionKind::kStallWatch;
    });
    if (watches && Stalls()) {
      if (!submit(kWide, StudyFile(kWide, kWideCells, options_.steps, 64))) return false;
      absl::StatusOr<v1::CancelCellsResponse> c = client_->Cancel(kWide, {});
      if (!c.ok()) {
        *why = "cancel " + std::string(kWide) + ": " + c.status().ToString();
        return false;
      }
      base_studies_.push_back(kWide);
    }
    fs::create_directories(BackupDir());
    set_up_unix_ms_ = WallMs();
    return true;
  }

  SimReport Fail(const std::string& why) {
    report_.violations.push_back(why);
    return report_;
  }
  void Violation(const std::string& what) { report_.violations.push_back(what); }
  void Say(const std::string& line) { report_.schedule.push_back(line); }
  std::string BackupDir() const { return cluster_.dir() + "/backups"; }

  // The studies that are to exist now: those submitted before the faults, and the second one
  // while a submission of it is held.
  std::vector<std::string> Studies() const {
    std::vector<std::string> studies = base_studies_;
    if (!model_.second_study.empty()) studies.push_back(kSecond);
    return studies;
  }

  // Runs the schedule; what an action starts (a partition, a stopped process) is undone by a
  // later event of its own.
  // Milliseconds since the faults started.
  int64_t FaultsMs() const {
    return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - faults_start_)
        .count();
  }

  void RunFaults() {
    faults_start_ = Clock::now();
    const auto start = faults_start_;
    std::multimap<int64_t, std::function<void()>> later;  // ms from start -> what to do
    later_ = &later;
    size_t next = 0;
    const int64_t end = options_.faults.count();
    int64_t served_checked = 0;
    while (true) {
      const int64_t now =
          std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
      while (!later.empty() && later.begin()->first <= now) {
        auto undo = later.begin()->second;
        later.erase(later.begin());
        undo();
      }
      if (now - served_checked >= 200) {
        CheckServedFile();
        served_checked = now;
      }
      if (next < schedule_.size() && schedule_[next].at_ms <= now) {
        Do(schedule_[next], now, &later);
        ++next;
        continue;
      }
      if (next >= schedule_.size() && now >= end) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    later_ = nullptr;
    // Whatever is still undone is undone by Restore().
  }

  void Do(const Action& a, int64_t now, std::multimap<int64_t, std::function<void()>>* later) {
    std::string said = a.Describe();
    const CellRef cell = cells_[a.cell % cells_.size()];
    switch (a.kind) {
      case ActionKind::kCancel: {
        absl::StatusOr<v1::CancelCellsResponse> r = client_->Cancel(cell.study, {cell.id});
        said += " (" + cell.study + "/" + cell.id + ")";
        said += r.ok() ? ": " + std::to_string(r->cancelled()) + " cancelled"
                       : ": " + r.status().ToString();
        break;
      }
      case ActionKind::kRerun:
      case ActionKind::kCancelThenRerun:
      case ActionKind::kRerunRunning: {
        said += " (" + cell.study + "/" + cell.id + ")";
        if (a.kind == ActionKind::kCancelThenRerun) {
          absl::StatusOr<v1::CancelCellsResponse> c = client_->Cancel(cell.study, {cell.id});
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
            client_->Rerun(cell.study, states, {}, {cell.id}, a.fresh);
        said += r.ok() ? ", " + std::to_string(r->queued()) + " queued"
                       : ", rerun: " + r.status().ToString();
        if (a.fresh && r.ok() && r->queued() > 0) model_.fresh[cell.id].push_back({sent, WallMs()});
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
        later->emplace(now + a.duration_ms, [this, later] { StartDaemonAgain(later); });
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
        const int64_t sent = WallMs();
        absl::StatusOr<v1::SubmitStudyResponse> r =
            client_->Submit("sim2.yaml", StudyFile(kSecond, 2, options_.steps, 48));
        said += r.ok() ? ": " + std::to_string(r->cells_added()) + " cells"
                       : ": " + r.status().ToString();
        if (r.ok()) {
          model_.second_study.push_back({sent, WallMs()});
          study_cells_[kSecond].clear();
          for (const v1::Cell& c : r->cells()) study_cells_[kSecond].push_back(c.id());
        }
        break;
      }
      case ActionKind::kBackup:
        said += TakeBackup();
        break;
      case ActionKind::kBackupOverServed:
        said += BackupOverServed(a.variant);
        break;
      case ActionKind::kRestore:
        said += RestoreBackup(a.choice);
        break;
      case ActionKind::kServeRotated:
        said += ServeRotated();
        break;
      case ActionKind::kCancelStudy: {
        const std::string study = base_studies_[a.choice % (options_.wsd ? 2 : 1)];
        const CliRun r = cluster_.RunCli({"cancel", study});
        said += " (" + study + "): exit " + std::to_string(r.code) + ", " + FirstLine(r);
        break;
      }
      case ActionKind::kRerunStudy:
        said += RerunStudy(base_studies_[a.choice % (options_.wsd ? 2 : 1)], a.fresh);
        break;
      case ActionKind::kStallBackup:
      case ActionKind::kStallWatch:
      case ActionKind::kStallDryRun: {
        if (!Stalls()) {
          said += ": skipped (no --stalled-reader-limit-ms)";
          break;
        }
        if (!cluster_.DaemonRuns()) {
          said += ": onsetd not running";
          break;
        }
        const StalledCall call = a.kind == ActionKind::kStallBackup  ? StalledCall::kBackup
                                 : a.kind == ActionKind::kStallWatch ? StalledCall::kWatch
                                                                     : StalledCall::kDryRun;
        stalls_.push_back(std::make_unique<StalledReader>(
            call, cluster_.address(), cluster_.token(), kWide,
            StudyFile("dry", 2500, options_.steps, 96), std::chrono::milliseconds(a.duration_ms),
            std::chrono::seconds(4)));
        stall_actions_.push_back(a.Describe());
        said += ": opened";
        break;
      }
    }
    Say(said);
  }

  // Starts onsetd again; one that cannot start (its disk is full) is tried again every second.
  void StartDaemonAgain(std::multimap<int64_t, std::function<void()>>* later) {
    std::string why;
    if (cluster_.StartDaemon(&why)) return;
    Say("onsetd did not start again (tried again in 1 s): " + why);
    later->emplace(FaultsMs() + 1000, [this, later] { StartDaemonAgain(later); });
  }

  static std::string FirstLine(const CliRun& r) {
    const std::string& text = r.out.empty() ? r.err : r.out;
    return text.substr(0, text.find('\n'));
  }

  // `onset backup --out DIR/backups/b-N.db` while cells run. It must succeed (or say the
  // coordinator is busy while a stalled reader holds the backup's place), and every point
  // stored before it of a cell that nothing could have trimmed meanwhile (the same lineage, the
  // same latest attempt, started at the same point) must be in it.
  std::string TakeBackup() {
    if (!cluster_.DaemonRuns()) return ": onsetd not running";
    const std::string out =
        BackupDir() + "/b-" + std::to_string(backups_.size() + backups_failed_ + 1) + ".db";
    std::vector<std::string> problems;
    const std::map<std::string, CellMark> before = ReadCellMarks(cluster_.Db(), &problems);
    const std::set<PointKey> stored = ReadPoints(cluster_.Db(), &problems);
    const int64_t t0 = WallMs();
    const CliRun r = cluster_.RunCli({"backup", "--out", out});
    const int64_t t1 = WallMs();
    const std::map<std::string, CellMark> after = ReadCellMarks(cluster_.Db(), &problems);
    if (r.code != 0) {
      ++backups_failed_;
      const bool busy = r.code == 1 && r.err.find("busy") != std::string::npos;
      if (busy && StalledBackupBetween(t0, t1)) {
        return ": busy while a stalled reader held its place";
      }
      Violation("onset backup --out " + out + " exited " + std::to_string(r.code) + ": " + r.err);
      return ": exit " + std::to_string(r.code) + ": " + FirstLine(r);
    }
    if (!problems.empty()) return ": taken; the live database not read: " + problems.front();
    const std::set<PointKey> copied = ReadPoints(out, &problems);
    if (!problems.empty()) {
      Violation("backup " + out + " cannot be read: " + problems.front());
      return ": unreadable";
    }
    int checked = 0, missing = 0;
    std::string example;
    for (const PointKey& p : stored) {
      const std::string& cell = std::get<0>(p);
      auto b = before.find(cell);
      auto a = after.find(cell);
      if (b == before.end() || a == after.end() || !(b->second == a->second)) continue;
      ++checked;
      if (copied.count(p)) continue;
      if (missing++ == 0) {
        example = cell + " " + std::get<1>(p) + " at " + std::to_string(std::get<2>(p));
      }
    }
    if (missing > 0) {
      Violation("backup " + out + ": " + std::to_string(missing) + " of the " +
                std::to_string(checked) + " points stored before it are not in it, e.g. " +
                example);
    }
    TakenBackup taken;
    taken.path = out;
    taken.taken_unix_ms = BackupTakenUnixMs(out).value_or(t0);
    taken.model = model_;
    backups_.push_back(std::move(taken));
    return ": " + fs::path(out).filename().string() + ", " + std::to_string(checked) +
           " points checked";
  }

  bool StalledBackupBetween(int64_t from, int64_t to) const {
    for (const std::unique_ptr<StalledReader>& s : stalls_) {
      if (s->call() != StalledCall::kBackup || s->opened_unix_ms() > to) continue;
      if (!s->Ended() || s->ended_unix_ms() >= from) return true;
    }
    return false;
  }

  // `onset backup --out` naming the served database (0), its -wal (1) or a hard link to it (2):
  // refused with exit 2, and the served files are the same files afterwards.
  std::string BackupOverServed(int variant) {
    if (!cluster_.DaemonRuns()) return ": onsetd not running";
    const std::string db = cluster_.Db();
    std::string target = db;
    if (variant == 1) target = db + "-wal";
    if (variant == 2) {
      target = cluster_.dir() + "/served-link.db";
      std::error_code ec;
      fs::remove(target, ec);
      fs::create_hard_link(db, target, ec);
      if (ec) return ": cannot link " + target + ": " + ec.message();
    }
    const auto db_was = Identity(db), wal_was = Identity(db + "-wal");
    const CliRun r = cluster_.RunCli({"backup", "--out", target});
    const auto db_is = Identity(db), wal_is = Identity(db + "-wal");
    if (variant == 2) {
      std::error_code ec;
      fs::remove(target, ec);  // two names of one database are not to be kept
    }
    if (r.code == 0) {
      Violation("onset backup replaced the served database: `onset backup --out " + target +
                "` exited 0: " + FirstLine(r));
    } else if (r.code != 2) {
      Violation("onset backup --out " + target + " (the served database's) exited " +
                std::to_string(r.code) + ", not 2: " + r.err);
    }
    if (db_is != db_was || (wal_was && wal_is != wal_was)) {
      Violation("onset backup --out " + target + " changed the served database's files");
    }
    if (!cluster_.DaemonRuns()) Violation("onsetd exited after onset backup --out " + target);
    return ": exit " + std::to_string(r.code) + ", " + FirstLine(r);
  }

  // The documented restore of an earlier backup while workers run.
  std::string RestoreBackup(int choice) {
    if (backups_.empty()) return ": no backup taken yet";
    const TakenBackup& backup = backups_[choice % backups_.size()];
    const int64_t at = WallMs();
    std::string why;
    const bool started = cluster_.RestoreBackup(backup.path, &why);
    const std::string said = ": " + fs::path(backup.path).filename().string() + " (taken " +
                             std::to_string(at - backup.taken_unix_ms) + " ms before)";
    if (!started && why.rfind("cannot copy", 0) == 0) {
      Violation("the restore of " + backup.path + " failed: " + why);
      return said + ": " + why;
    }
    Restored(backup.model, at);
    return said + (started ? "" : NotStarted(why));
  }

  // onsetd stopped and started on its newest rotating backup, where it lies, with the rotation
  // on: it is a restore, and the rotation must never delete the file it serves.
  std::string ServeRotated() {
    // A copy of this timeline, taken after the studies were submitted (one appears every
    // second).
    const int64_t since = std::max(set_up_unix_ms_, restores_.empty() ? 0 : restores_.back());
    std::string newest;
    int64_t taken = 0;
    for (int tries = 0; tries < 30 && newest.empty(); ++tries) {
      std::vector<std::string> files;
      std::error_code ec;
      for (const auto& e : fs::directory_iterator(cluster_.RotationDir(), ec)) {
        const std::string name = e.path().filename().string();
        if (name.rfind("onset-", 0) == 0 && name.size() > 3 &&
            name.substr(name.size() - 3) == ".db") {
          files.push_back(e.path().string());
        }
      }
      std::sort(files.begin(), files.end());
      if (!files.empty() && files.back() != cluster_.Db()) {
        // A copy without a stamp was taken before it was written (2 s allowed for the write).
        struct stat st;
        const int64_t written_ms =
            ::stat(files.back().c_str(), &st) == 0
                ? static_cast<int64_t>(st.st_mtim.tv_sec) * 1000 + st.st_mtim.tv_nsec / 1'000'000
                : 0;
        const int64_t t = BackupTakenUnixMs(files.back()).value_or(written_ms - 2000);
        if (t >= since) {
          newest = files.back();
          taken = t;
        }
      }
      if (newest.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    if (newest.empty()) return ": no rotating backup of this timeline yet";
    const int64_t at = WallMs();
    cluster_.ServeDb(newest);
    if (cluster_.DaemonRuns()) cluster_.SignalDaemon(SIGTERM);
    std::string why;
    const bool started = cluster_.StartDaemon(&why);
    served_where_it_lies_ = newest;
    // What the copy holds: what was answered before it was taken; what was sent after it is
    // lost; a submission in flight while it was taken is in it if the coordinator has it.
    Model model;
    for (const auto& [cell, asked] : model_.fresh) {
      for (const Asked& a : asked) {
        if (a.done <= taken) model.fresh[cell].push_back(a);
      }
    }
    for (const Asked& a : model_.second_study) {
      if (a.done <= taken || (a.sent < taken && client_->Get(kSecond).ok())) {
        model.second_study.push_back(a);
      }
    }
    Restored(model, at);
    return ": " + fs::path(newest).filename().string() + " (taken " + std::to_string(at - taken) +
           " ms before)" + (started ? "" : NotStarted(why));
  }

  // onsetd did not start: on a full disk it cannot, and is tried again every second (a
  // restore is done once it has); else that is a broken promise.
  std::string NotStarted(const std::string& why) {
    if (!cluster_.DiskFull()) Violation("onsetd did not start on the backup: " + why);
    if (later_ != nullptr) {
      later_->emplace(FaultsMs() + 1000, [this] { StartDaemonAgain(later_); });
    }
    return ": onsetd did not start (tried again in 1 s): " + why;
  }

  // After a restore, the coordinator holds what its copy held.
  void Restored(const Model& model, int64_t at) {
    model_ = model;
    restores_.push_back(at);
  }

  // The served file, once it is a backup served where it lies, is never deleted.
  void CheckServedFile() {
    if (served_where_it_lies_.empty() || served_vanished_) return;
    std::error_code ec;
    if (fs::exists(served_where_it_lies_, ec)) return;
    served_vanished_ = true;
    Violation("the database onsetd serves, " + served_where_it_lies_ +
              " (a rotating backup served where it lies), vanished while it served it");
  }

  // `onset rerun STUDY --state <every state but queued> [--fresh]`. A fresh one starts a new
  // lineage for the cells whose lineage moved on, or whose fresh rerun now waits for their
  // attempt to end.
  std::string RerunStudy(const std::string& study, bool fresh) {
    std::vector<std::string> problems;
    const std::map<std::string, CellMark> before = ReadCellMarks(cluster_.Db(), &problems);
    std::vector<std::string> args = {"rerun", study, "--state",
                                     "failed,diverged,cancelled,succeeded,backoff,running"};
    if (fresh) args.push_back("--fresh");
    const int64_t sent = WallMs();
    const CliRun r = cluster_.RunCli(args);
    const int64_t done = WallMs();
    const std::map<std::string, CellMark> after = ReadCellMarks(cluster_.Db(), &problems);
    std::string said = " (" + study + "): exit " + std::to_string(r.code) + ", " + FirstLine(r);
    if (!fresh || r.code != 0) return said;
    if (!problems.empty()) {
      // Which cells it took is not known: held to a fresh start are all of the study's that ran.
      return said + "; its cells not read: " + problems.front();
    }
    int renewed = 0;
    for (const auto& [key, mark] : after) {
      if (key.rfind(study + "/", 0) != 0) continue;
      auto was = before.find(key);
      const bool moved =
          was == before.end() || was->second.lineage != mark.lineage ||
          (mark.intent.find("fresh") != std::string::npos && was->second.intent != mark.intent);
      if (!moved) continue;
      model_.fresh[key.substr(study.size() + 1)].push_back({sent, done});
      ++renewed;
    }
    return said + " (" + std::to_string(renewed) + " from scratch)";
  }

  // A stalled reader past the limit must have had its call cancelled by onsetd.
  void CheckStall(const std::string& action, StalledReader& stall) {
    const StalledReader::Outcome& o = stall.Wait();
    const std::string how = o.status + ", " + std::to_string(o.messages) + " messages (" +
                            std::to_string(o.bytes) + " bytes) read after the stall";
    Say(action + ": " + how);
    if (o.waited_throughout) {
      Violation(action + ": not cancelled by onsetd (--stalled-reader-limit-ms " +
                std::to_string(options_.stalled_reader_limit_ms) + "): " + how);
    }
  }

  // Waits until every cell of every study has ended, or the settle time is up.
  void Settle() {
    const auto deadline = Clock::now() + options_.settle;
    while (Clock::now() < deadline) {
      bool all = true;
      for (const std::string& study : Studies()) {
        if (study == kWide) continue;  // cancelled at once; the checks see it
        absl::StatusOr<v1::GetStudyResponse> s = client_->Get(study);
        if (!s.ok()) {
          all = false;
          break;
        }
        for (const v1::Cell& c : s->cells()) all = all && Ended(c);
      }
      if (all) return;
      CheckServedFile();
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  }

  const SimOptions options_;
  const std::vector<Action> schedule_;
  Cluster cluster_;
  std::unique_ptr<cli::StudyClient> client_;
  std::vector<CellRef> cells_;  // what the schedule's cell indices name
  std::vector<std::string> base_studies_;
  std::map<std::string, std::vector<std::string>> study_cells_;
  int64_t set_up_unix_ms_ = 0;
  Clock::time_point faults_start_;
  std::multimap<int64_t, std::function<void()>>* later_ = nullptr;  // RunFaults' events
  Model model_;
  std::vector<TakenBackup> backups_;
  int backups_failed_ = 0;
  std::vector<int64_t> restores_;
  std::string served_where_it_lies_;
  bool served_vanished_ = false;
  std::vector<std::unique_ptr<StalledReader>> stalls_;
  std::vector<std::string> stall_actions_;  // the action that opened each
  SimReport report_;
};

}  // namespace

std::string SimReport::Describe(bool schedule_too) const {
  char head[256];
  std::snprintf(head, sizeof head,
                "seed %u: %s in %.0f s: %d succeeded, %d cancelled, %d failed, %d unfinished; "
                "%d attempts, %d trainers started",
                seed, ok() ? "ok" : "FAILED", seconds, counts.succeeded, counts.cancelled,
                counts.failed, counts.unfinished, counts.attempts, counts.trainers);
  std::string text = head;
  text += "\n  kinds: " + kinds + "\n";
  if (ok() && !schedule_too) return text;
  text += "  schedule:\n";
  for (const std::string& line : schedule) text += "    " + line + "\n";
  if (ok()) return text;
  text += "  violations:\n";
  for (const std::string& line : violations) text += "    " + line + "\n";
  if (!dir.empty()) text += "  files kept in " + dir + "\n";
  return text;
}

ScheduleOptions ScheduleFor(const SimOptions& o) {
  ScheduleOptions s;
  s.faults_ms = o.faults.count();
  s.cells = o.cells;
  s.workers = o.workers;
  s.full_disk = o.full_disk;
  return s;
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
