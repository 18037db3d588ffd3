// onset-sim-trainer: a stand-in for onset-train in the lifecycle simulator (simulation.h). It
// speaks the trainer contract (base/trainer_contract.h: flags, descriptors, exit codes, the
// metrics lines of base/metrics_line.h) but trains nothing: each step sleeps, reports a loss and
// the id of its run, and checkpoints write a small self-checking file. Every start and stop goes
// to the journal (journal.h), and so does every broken promise it sees:
//
//   - two trainers of one cell at once: each trainer holds an exclusive lock on a file named
//     after its cell while it runs; one that cannot take it is the second;
//   - a checkpoint it was told to resume that is missing or damaged;
//   - a run it resumes that belongs to another cell;
//   - a WSD branch's trunk checkpoint (--branch-from) that is missing, damaged, not a trunk's, or
//     not at the branch's branch point.
//
// The run id (a random 40-bit number, exact as a double) starts with a run from scratch and is
// carried by every checkpoint, so the points a cell keeps tell which runs they came from.
//
// WSD trunks and branches (docs/wsd-trunks.md) as onset-train runs them: a trunk (its config a
// trunk spec, model/config/wsd_trunk.h) trains to its `until`, writes a checkpoint at each branch
// point that it never prunes, and when it starts re-announces the branch-point checkpoints it has
// (linking those of the attempt it resumed into its own directory first). A branch with no
// checkpoint of its own to resume starts from its trunk's file: a new run of its own (NEWRUN
// with trunk_run and branch_at) that reports the trunk run's points up to the branch point as
// its own, as onset-train replays the trunk's train events, then trains its decay. Its
// checkpoints carry both runs, so a resumed branch reports the same two.
//
// Environment: ONSET_SIM_JOURNAL (the journal directory; required), ONSET_SIM_STEP_MS (the time
// a step takes, default 50), ONSET_SIM_CRASH_PERMILLE (the chance that a step fails the run,
// exit 1, default 0).
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "base/checkpoint_name.h"
#include "base/metric_names.h"
#include "base/metrics_line.h"
#include "base/trainer_contract.h"
#include "tests/sim/journal.h"

namespace {

namespace fs = std::filesystem;
using onset::sim::JournalEntry;

std::atomic<bool> g_stop{false};
std::atomic<int64_t> g_recorded{0};  // the newest checkpoint the worker says was recorded

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

struct Args {
  std::string config;
  std::string checkpoint_dir;
  std::vector<std::string> resume_from;
  std::string branch_from;
  int supervisor_fd = -1;
  bool resume = false;  // --resume: the newest whole checkpoint in --checkpoint-dir
};

Args Parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == onset::trainer::kFlagResume) {
      a.resume = true;
      continue;
    }
    if (i + 1 >= argc) break;
    const std::string value = argv[i + 1];
    if (flag == onset::trainer::kFlagConfig) {
      a.config = value;
    } else if (flag == onset::trainer::kFlagCheckpointDir) {
      a.checkpoint_dir = value;
    } else if (flag == onset::trainer::kFlagResumeFrom) {
      a.resume_from.push_back(value);
    } else if (flag == onset::trainer::kFlagBranchFrom) {
      a.branch_from = value;
    } else if (flag == onset::trainer::kFlagSupervisorFd) {
      a.supervisor_fd = std::atoi(value.c_str());
    } else {
      continue;
    }
    ++i;
  }
  return a;
}

int EnvInt(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::atoi(v) : fallback;
}

// A checkpoint: what a run needs to go on, with a sum over it.
struct Checkpoint {
  std::string cell;
  uint64_t run = 0;
  int64_t tokens = 0;
  std::string role = "cell";  // "cell", "trunk" or "branch"
  uint64_t trunk_run = 0;     // a branch's: the trunk run its points up to branch_at are
  int64_t branch_at = 0;      // a branch's: where it left its trunk
};

uint64_t Sum(const std::string& text) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
  return h;
}

std::string Body(const Checkpoint& c) {
  return "onset-sim-checkpoint 1\ncell " + c.cell + "\nrun " + std::to_string(c.run) + "\ntokens " +
         std::to_string(c.tokens) + "\nrole " + c.role + "\ntrunk_run " +
         std::to_string(c.trunk_run) + "\nbranch_at " + std::to_string(c.branch_at) + "\n";
}

// Written whole or not at all: a temporary file, fsync, rename.
bool WriteCheckpoint(const std::string& dir, const Checkpoint& c, int64_t* bytes) {
  const std::string body = Body(c);
  const std::string text = body + "sum " + std::to_string(Sum(body)) + "\n";
  const std::string path = dir + "/" + onset::base::CheckpointFileName(c.tokens);
  const std::string temp = path + ".tmp-" + std::to_string(::getpid());
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) &&
                  ::fsync(fd) == 0;
  ::close(fd);
  if (!ok || ::rename(temp.c_str(), path.c_str()) != 0) {
    ::unlink(temp.c_str());
    return false;
  }
  *bytes = static_cast<int64_t>(text.size());
  return true;
}

// nullopt with *why when the file is missing or fails its sum.
std::optional<Checkpoint> ReadCheckpoint(const std::string& path, std::string* why) {
  std::ifstream in(path);
  if (!in) {
    *why = "missing";
    return std::nullopt;
  }
  std::stringstream text;
  text << in.rdbuf();
  const std::string all = text.str();
  const size_t sum_at = all.rfind("sum ");
  if (sum_at == std::string::npos) {
    *why = "no_sum";
    return std::nullopt;
  }
  const std::string body = all.substr(0, sum_at);
  if (std::strtoull(all.c_str() + sum_at + 4, nullptr, 10) != Sum(body)) {
    *why = "bad_sum";
    return std::nullopt;
  }
  Checkpoint c;
  std::istringstream lines(body);
  std::string key, magic;
  lines >> magic >> key;  // "onset-sim-checkpoint 1"
  while (lines >> key) {
    if (key == "cell") lines >> c.cell;
    if (key == "run") lines >> c.run;
    if (key == "tokens") lines >> c.tokens;
    if (key == "role") lines >> c.role;
    if (key == "trunk_run") lines >> c.trunk_run;
    if (key == "branch_at") lines >> c.branch_at;
  }
  return c;
}

// Keeps the newest two, the pinned ones (a trunk's branch points), and under a supervisor nothing
// at or past the newest recorded one (the contract of base/trainer_contract.h
// kSupervisorRecorded).
void Prune(const std::string& dir, bool supervised, const std::set<int64_t>& pinned) {
  std::vector<std::pair<int64_t, fs::path>> files;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("ckpt-", 0) != 0 || name.size() < 9 || name.substr(name.size() - 3) != ".pt") {
      continue;
    }
    files.emplace_back(std::atoll(name.c_str() + 5), entry.path());
  }
  std::sort(files.begin(), files.end());
  const int64_t keep_from = supervised ? g_recorded.load() : INT64_MAX;
  for (size_t i = 0; i + 2 < files.size(); ++i) {
    if (files[i].first >= keep_from || pinned.count(files[i].first) > 0) continue;
    fs::remove(files[i].second, ec);
  }
}

void Emit(const std::string& event, int64_t tokens, std::optional<int64_t> step,
          std::map<std::string, double> metrics) {
  onset::trainer::MetricsEvent e{event, tokens, step, std::move(metrics)};
  const std::string line = e.Format() + "\n";
  (void)!::write(1, line.data(), line.size());
}

// The supervisor's acknowledgements, and its death.
void WatchSupervisor(int fd, const std::string& journal, JournalEntry who) {
  std::thread([fd, journal, who]() mutable {
    std::string line;
    while (true) {
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, -1) < 0) continue;
      char buf[256];
      const ssize_t n = ::read(fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      for (ssize_t i = 0; i < n; ++i) {
        if (buf[i] != '\n') {
          line.push_back(buf[i]);
          continue;
        }
        const std::string prefix = std::string(onset::trainer::kSupervisorRecorded) + " ";
        if (line.rfind(prefix, 0) == 0) {
          const int64_t t = std::atoll(line.c_str() + prefix.size());
          int64_t seen = g_recorded.load();
          while (t > seen && !g_recorded.compare_exchange_weak(seen, t)) {
          }
        }
        line.clear();
      }
    }
    who.at_unix_ms = NowMs();
    who.kind = "END";
    who.fields = {{"how", "orphaned"}};
    onset::sim::Append(journal, who);
    ::kill(0, SIGKILL);
    ::_exit(onset::trainer::kExitStopped);
  }).detach();
}

void OnTerm(int) { g_stop = true; }

}  // namespace

int main(int argc, char** argv) {
  const Args args = Parse(argc, argv);
  const char* journal_env = std::getenv("ONSET_SIM_JOURNAL");
  if (journal_env == nullptr || args.config.empty()) {
    std::fprintf(stderr, "onset-sim-trainer: needs --config and ONSET_SIM_JOURNAL\n");
    return onset::trainer::kExitUsage;
  }
  const std::string journal = journal_env;
  const int step_ms = EnvInt("ONSET_SIM_STEP_MS", 50);
  const int crash_permille = EnvInt("ONSET_SIM_CRASH_PERMILLE", 0);

  nlohmann::json config;
  try {
    std::ifstream in(args.config);
    config = nlohmann::json::parse(in);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "onset-sim-trainer: %s: %s\n", args.config.c_str(), e.what());
    return onset::trainer::kExitUsage;
  }
  // A trunk's config is a trunk spec: {"trunk": {"until", "eval_at", "branch_points"}, "cell"}.
  const bool trunk = config.is_object() && config.contains("trunk");
  const nlohmann::json cell_config =
      trunk ? config.value("cell", nlohmann::json::object()) : config;
  const nlohmann::json train = cell_config.value("train", nlohmann::json::object());
  const nlohmann::json model = cell_config.value("model", nlohmann::json::object());
  // Tokens per optimizer step: max(1, batch_tokens / seq_len) sequences of seq_len (as
  // model/config/wsd_trunk.h TokensPerStep).
  const int64_t seq_len = std::max<int64_t>(1, model.value("seq_len", int64_t{1}));
  const int64_t step_tokens =
      std::max<int64_t>(1, train.value("batch_tokens", int64_t{1024}) / seq_len) * seq_len;
  std::set<int64_t> pinned;  // a trunk's branch points
  int64_t budget = train.value("tokens", int64_t{0});
  if (trunk) {
    const nlohmann::json spec = config["trunk"];
    budget = spec.value("until", int64_t{0});
    for (const nlohmann::json& at : spec.value("branch_points", nlohmann::json::array())) {
      pinned.insert(at.get<int64_t>());
    }
  }
  int64_t every = train.value("checkpoint_every_tokens", int64_t{0});
  if (every <= 0) every = std::max<int64_t>(step_tokens, budget / 4);
  const bool branch = !trunk && !args.branch_from.empty();
  // A branch's branch point: the last step boundary at or before its decay starts (as
  // model/config/wsd_trunk.h BranchPoint).
  int64_t branch_point = 0;
  if (branch) {
    const double decay = train.value("decay_fraction", 0.0);
    const int64_t decay_start =
        std::max<int64_t>(0, budget - std::llround(decay * static_cast<double>(budget)));
    branch_point = decay_start / step_tokens * step_tokens;
  }

  // The worker runs it in WORK/CELL/attempt-N.
  const fs::path cwd = fs::current_path();
  JournalEntry who;
  who.cell = cwd.parent_path().filename().string();
  who.attempt = std::atoi(cwd.filename().string().c_str() + std::strlen("attempt-"));
  who.pid = static_cast<int>(::getpid());
  auto note = [&](const std::string& kind, std::map<std::string, std::string> fields) {
    JournalEntry e = who;
    e.at_unix_ms = NowMs();
    e.kind = kind;
    e.fields = std::move(fields);
    onset::sim::Append(journal, e);
  };

  struct sigaction term = {};
  term.sa_handler = OnTerm;
  sigemptyset(&term.sa_mask);
  ::sigaction(SIGTERM, &term, nullptr);
  ::sigaction(SIGINT, &term, nullptr);
  if (args.supervisor_fd >= 0) WatchSupervisor(args.supervisor_fd, journal, who);

  // One trainer of a cell at a time: the lock goes with the process, however it dies.
  fs::create_directories(onset::sim::LockDir(journal));
  const std::string lock_path = onset::sim::LockDir(journal) + "/" + who.cell + ".lock";
  const int lock = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock < 0 || ::flock(lock, LOCK_EX | LOCK_NB) != 0) {
    note("VIOLATION", {{"what", "another trainer of this cell runs"}});
  }

  // Where it starts: the first checkpoint it was told to resume that it can read.
  std::optional<Checkpoint> from;
  std::string from_path;
  for (const std::string& path : args.resume_from) {
    std::string why;
    from = ReadCheckpoint(path, &why);
    if (from && from->cell != who.cell) {
      note("VIOLATION", {{"what", "resumed another cell's checkpoint " + path}});
      from.reset();
    }
    if (from) {
      from_path = path;
      break;
    }
    // Every checkpoint the coordinator names was recorded whole: none may be missing or broken.
    note("VIOLATION", {{"what", "named checkpoint " + why + " " + path}});
  }
  // --resume (workers before the coordinator named what to resume): the newest whole one here.
  if (args.resume && args.resume_from.empty()) {
    std::vector<fs::path> files;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(args.checkpoint_dir, ec)) {
      const std::string name = entry.path().filename().string();
      if (name.rfind("ckpt-", 0) == 0 && name.size() > 3 && name.substr(name.size() - 3) == ".pt") {
        files.push_back(entry.path());
      }
    }
    std::sort(files.rbegin(), files.rend());
    for (const fs::path& file : files) {
      std::string why;
      if ((from = ReadCheckpoint(file.string(), &why))) {
        from_path = file.string();
        break;
      }
    }
  }
  std::mt19937_64 random(std::random_device{}() ^ static_cast<uint64_t>(::getpid()));
  auto new_run = [&] { return (random() & ((uint64_t{1} << 40) - 1)) | 1; };
  uint64_t run = 0;
  uint64_t trunk_run = 0;  // a branch's: the trunk run it continues
  int64_t branch_at = 0;
  int64_t tokens = 0;
  if (from) {
    run = from->run;
    tokens = from->tokens;
    trunk_run = from->trunk_run;
    branch_at = from->branch_at;
  } else if (branch) {
    // No checkpoint of its own: from its trunk's, which the coordinator names only once the
    // trunk recorded it (so it is there and whole), at this branch's branch point.
    std::string why;
    const std::optional<Checkpoint> trunk_file = ReadCheckpoint(args.branch_from, &why);
    const std::string trunk_id =
        fs::path(args.branch_from).parent_path().parent_path().filename().string();
    if (!trunk_file) {
      note("VIOLATION", {{"what", "trunk checkpoint " + why + " " + args.branch_from}});
    } else if (trunk_file->role != "trunk" || trunk_file->cell != trunk_id) {
      note("VIOLATION",
           {{"what", "branched from a checkpoint of " + trunk_file->role + " " + trunk_file->cell +
                         ", not of trunk " + trunk_id + ": " + args.branch_from}});
    } else if (trunk_file->tokens != branch_point) {
      note("VIOLATION", {{"what", "trunk checkpoint at " + std::to_string(trunk_file->tokens) +
                                      " tokens, the branch point is " +
                                      std::to_string(branch_point) + ": " + args.branch_from}});
    }
    if (!trunk_file) {
      // onset-train never starts a branch afresh in its trunk's stead: an error.
      std::fprintf(stderr, "onset-sim-trainer: cannot branch from %s (%s)\n",
                   args.branch_from.c_str(), why.c_str());
      return onset::trainer::kExitRuntimeError;
    }
    trunk_run = trunk_file->run;
    branch_at = trunk_file->tokens;
    tokens = branch_at;
    run = new_run();
    note("NEWRUN", {{"run", std::to_string(run)},
                    {"trunk_run", std::to_string(trunk_run)},
                    {"branch_at", std::to_string(branch_at)}});
  } else {
    run = new_run();
    note("NEWRUN", {{"run", std::to_string(run)}});
  }
  note("START", {{"run", std::to_string(run)}, {"from", std::to_string(tokens)}});
  Emit(onset::trainer::kEventStart, 0, std::nullopt, {});
  if (!args.resume_from.empty() || from || branch) {
    Emit(onset::trainer::kEventResume, tokens, std::nullopt,
         {{onset::metric::kTrainResumedAtTokens, static_cast<double>(tokens)}});
  }
  auto loss = [&](int64_t t) {
    // A branch's points up to where it left its trunk are the trunk run's.
    const uint64_t of = branch_at > 0 && t <= branch_at ? trunk_run : run;
    return std::map<std::string, double>{
        {onset::metric::kTrainLoss, 10.0 - 9.0 * static_cast<double>(t) / budget},
        {"sim/run", static_cast<double>(of)}};
  };
  // What the run had reported up to its checkpoint (a branch: its trunk's up to its branch
  // point), once more, as onset-train does: the last deliveries of the attempt that wrote it may
  // have been lost.
  for (int64_t t = step_tokens; tokens > 0 && t <= tokens; t += step_tokens) {
    Emit(onset::trainer::kEventTrain, t, t / step_tokens, loss(t));
  }
  fs::create_directories(args.checkpoint_dir);
  // A trunk announces the branch-point checkpoints it has: its branches wait for them, and an
  // attempt that died may have taken one with it. Those in the directory of the checkpoint it
  // resumed (another attempt's) are linked into its own first.
  if (trunk) {
    const fs::path resumed_dir = from_path.empty() ? fs::path() : fs::path(from_path).parent_path();
    for (int64_t at : pinned) {
      if (at > tokens) break;
      const fs::path own = fs::path(args.checkpoint_dir) / onset::base::CheckpointFileName(at);
      std::error_code ec;
      if (!fs::exists(own, ec) && !resumed_dir.empty() &&
          resumed_dir != fs::path(args.checkpoint_dir)) {
        fs::create_hard_link(resumed_dir / onset::base::CheckpointFileName(at), own, ec);
      }
      const auto bytes = fs::file_size(own, ec);
      if (!ec) {
        Emit(onset::trainer::kEventCheckpoint, at, std::nullopt,
             {{onset::metric::kCheckpointBytes, static_cast<double>(bytes)}});
      }
    }
  }
  auto checkpoint = [&]() {
    int64_t bytes = 0;
    Checkpoint c{who.cell,  run,      tokens, trunk ? "trunk" : branch_at > 0 ? "branch" : "cell",
                 trunk_run, branch_at};
    if (!WriteCheckpoint(args.checkpoint_dir, c, &bytes)) {
      std::fprintf(stderr, "onset-sim-trainer: cannot write a checkpoint in %s\n",
                   args.checkpoint_dir.c_str());
      std::exit(onset::trainer::kExitRuntimeError);
    }
    Emit(onset::trainer::kEventCheckpoint, tokens, std::nullopt,
         {{onset::metric::kCheckpointBytes, static_cast<double>(bytes)}});
    Prune(args.checkpoint_dir, args.supervisor_fd >= 0, pinned);
  };

  std::uniform_int_distribution<int> permille(0, 999);
  int64_t step = tokens / step_tokens;
  while (tokens < budget) {
    if (g_stop) {
      checkpoint();
      Emit(onset::trainer::kEventStopped, tokens, std::nullopt, {});
      note("END", {{"how", "stopped"}});
      return onset::trainer::kExitStopped;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(step_ms));
    if (crash_permille > 0 && permille(random) < crash_permille) {
      note("CRASH", {});
      std::fprintf(stderr, "onset-sim-trainer: failing on purpose at %lld tokens\n",
                   static_cast<long long>(tokens));
      return onset::trainer::kExitRuntimeError;
    }
    tokens = std::min(budget, tokens + step_tokens);
    ++step;
    Emit(onset::trainer::kEventTrain, tokens, step, loss(tokens));
    if (tokens % every == 0 || tokens >= budget || pinned.count(tokens) > 0) checkpoint();
  }
  Emit(onset::trainer::kEventDone, tokens, std::nullopt, {});
  note("END", {{"how", "done"}});
  return onset::trainer::kExitOk;
}
