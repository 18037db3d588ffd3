// The data of an `onset run` after it ended: the read commands and the dashboard work on
// ./onset-data with no coordinator, print what they printed while one served it, and change
// nothing; the commands that write say what to do instead. Skips when a binary is missing.
#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/auth_token.h"
#include "tests/integration/harness.h"

namespace onset {
namespace {

namespace fs = std::filesystem;
using testing::Child;
using testing::Finish;
using ::testing::HasSubstr;
using testing::HaveBinaries;
using ::testing::Not;
using testing::Ran;
using testing::Start;
using testing::WaitForFile;
using worker::ExitStatus;
using worker::PosixProcessLauncher;

constexpr auto kRunTimeout = std::chrono::minutes(5);
constexpr char kReadingNote[] = "reading onset-data/onset.db";

// Two cells, tiny enough for a couple of seconds of CPU each.
constexpr char kTinyStudy[] = R"(name: tiny
model: {layers: 2, d_model: 32, heads: 2, seq_len: 64}
train: {batch_tokens: 1K, micro_batch: 4, log_every_steps: 2}
data: {}
eval: {every_tokens: 10K, heldout_seqs: 4, niah_lengths: [48, 64], niah_samples: 2}
grid:
  arch: [full, "swa:1"]
  window: [16]
  pos: [rope]
  tokens: [20K]
  seeds: 1
)";

// `out` for comparing: JSON (a document, or one per line) as parsed, whose objects compare
// whatever order their keys were printed in (a proto map's order differs between processes);
// anything else as it is.
nlohmann::json Comparable(const std::string& out) {
  nlohmann::json whole = nlohmann::json::parse(out, nullptr, /*allow_exceptions=*/false);
  if (!whole.is_discarded()) return whole;
  nlohmann::json lines = nlohmann::json::array();
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    nlohmann::json parsed = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (parsed.is_discarded()) return out;
    lines.push_back(std::move(parsed));
  }
  return lines;
}

// A free loopback port, closed again: nothing answers there.
int ClosedPort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

// Whether something accepts connections on 127.0.0.1:`port`.
bool Listening(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  const bool connected = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  ::close(fd);
  return connected;
}

// GET `target` from "127.0.0.1:PORT" over a plain socket; `token` as a bearer token when not
// empty. Reads the response up to its Content-Length. {status, body}; status 0 on failure.
std::pair<int, std::string> HttpGet(const std::string& address, const std::string& target,
                                    const std::string& token) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(std::stoi(address.substr(address.rfind(':') + 1))));
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return {0, ""};
  }
  std::string request = "GET " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n";
  if (!token.empty()) request += "Authorization: Bearer " + token + "\r\n";
  request += "\r\n";
  (void)::send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  std::string response;
  char buffer[4096];
  size_t body = std::string::npos;
  size_t length = 0;
  for (ssize_t n; (n = ::recv(fd, buffer, sizeof buffer, 0)) > 0;) {
    response.append(buffer, n);
    if (body == std::string::npos && (body = response.find("\r\n\r\n")) != std::string::npos) {
      body += 4;
      std::string head = response.substr(0, body);
      for (char& c : head) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      const size_t field = head.find("\r\ncontent-length:");
      if (field == std::string::npos) break;
      length = std::strtoul(head.c_str() + field + 17, nullptr, 10);
    }
    if (body != std::string::npos && response.size() >= body + length) break;
  }
  ::close(fd);
  const size_t space = response.find(' ');
  if (space == std::string::npos || body == std::string::npos) return {0, response};
  return {std::atoi(response.c_str() + space + 1), response.substr(body, length)};
}

class AfterRunTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Nothing from the environment may name another coordinator or token.
    for (const char* name :
         {"ONSET_COORDINATOR", "ONSET_TOKEN", "ONSET_TOKEN_FILE", "ONSET_TLS_CA"}) {
      unsetenv(name);
    }
    dir_ = fs::temp_directory_path() /
           ("onset-after-run-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    data_ = dir_ / "onset-data";
    std::ofstream(dir_ / "tiny.yaml") << kTinyStudy;
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(dir_);
  }

  // `onset ARGS` in dir_, as a person would type it next to ./onset-data.
  Ran Onset(std::vector<std::string> args) {
    Child child = Start(launcher_, "onset", std::move(args), dir_.string());
    return Finish(child, std::chrono::duration_cast<std::chrono::milliseconds>(kRunTimeout));
  }

  // `onset run` of `file` (in dir_) to the end; a failure fails the test.
  void RunStudy(const std::string& file) {
    const Ran run = Onset({"run", file, "--workers", "2"});
    ASSERT_EQ(run.code, 0) << run.err;
    ASSERT_FALSE(fs::exists(data_ / "coordinator.addr"));
  }

  // The cells' ids in the database, in the order of the study.
  std::vector<std::string> CellIds() {
    std::vector<std::string> ids;
    testing::ForEachRow(data_ / "onset.db", "SELECT hash FROM cells ORDER BY id", {},
                        [&](sqlite3_stmt* row) { ids.push_back(testing::Text(row, 0)); });
    return ids;
  }

  std::map<std::string, int> StateCounts() {
    std::map<std::string, int> counts;
    testing::ForEachRow(
        data_ / "onset.db", "SELECT state, COUNT(*) FROM cells GROUP BY state", {},
        [&](sqlite3_stmt* row) { counts[testing::Text(row, 0)] = sqlite3_column_int(row, 1); });
    return counts;
  }

  fs::path dir_;
  fs::path data_;
  PosixProcessLauncher launcher_;
};

TEST_F(AfterRunTest, ReadCommandsPrintWhatTheyPrintedWhileACoordinatorServedTheData) {
  std::string missing;
  if (!HaveBinaries({"onset", "onsetd", "onset-train"}, &missing)) {
    GTEST_SKIP() << missing << " not built";
  }
  ASSERT_NO_FATAL_FAILURE(RunStudy("tiny.yaml"));
  const std::vector<std::string> cells = CellIds();
  ASSERT_EQ(cells.size(), 2u);
  const std::vector<std::vector<std::string>> commands = {
      {"status"},
      {"status", "tiny"},
      {"status", "tiny", "--json"},
      {"results", "tiny"},
      {"results", "tiny", "--json"},
      {"compare", "tiny", "--metric", "train/loss", "--threshold", "100", "--by", "arch",
       "--baseline", "arch=full", "--json"},
      {"compare", "tiny", "--metric", "train/loss", "--threshold", "100"},
      {"export", "tiny", "--format", "csv"},
      {"export", "tiny", "--format", "jsonl", "--metrics", "train/loss"},
      {"plot", "tiny", "--metric", "train/loss", "--out", "-"},
      {"heads", "tiny", cells[0], "--json"},
      {"heads", "tiny", cells[0].substr(0, 6), "--json"},  // a unique prefix names it too
      {"logs", cells[0]},
      {"logs", "tiny", cells[1].substr(0, 8), "--tail", "3"},
      {"workers", "--json"},
      {"watch", "tiny"},
  };

  // A coordinator serving the run's data as the run's own did: its address in
  // onset-data/coordinator.addr, its token in onset-data/onsetd.token.
  std::map<size_t, Ran> live;
  {
    Child daemon = Start(launcher_, "onsetd",
                         {"--db", (data_ / "onset.db").string(), "--listen", "127.0.0.1:0",
                          "--address-file", (data_ / "coordinator.addr").string()});
    ASSERT_FALSE(WaitForFile(data_ / "coordinator.addr").empty()) << daemon.process->StderrTail();
    for (size_t i = 0; i < commands.size(); ++i) {
      live[i] = Onset(commands[i]);
      EXPECT_EQ(live[i].code, 0) << commands[i][0] << ": " << live[i].err;
      EXPECT_THAT(live[i].err, Not(HasSubstr(kReadingNote)));
    }
    EXPECT_EQ(daemon.process->Terminate(std::chrono::seconds(10)).exit_code, 0);
  }

  // onsetd leaves its address file behind: stale now. Every command reads the database instead,
  // says so once on stderr, and prints the same as before.
  ASSERT_TRUE(fs::exists(data_ / "coordinator.addr"));
  std::map<size_t, Ran> after;
  for (size_t i = 0; i < commands.size(); ++i) {
    const auto start = std::chrono::steady_clock::now();
    after[i] = Onset(commands[i]);
    const auto took = std::chrono::steady_clock::now() - start;
    EXPECT_EQ(after[i].code, 0) << commands[i][0] << ": " << after[i].err;
    EXPECT_EQ(Comparable(after[i].out), Comparable(live[i].out)) << commands[i][0];
    const size_t note = after[i].err.find(kReadingNote);
    EXPECT_NE(note, std::string::npos) << after[i].err;
    EXPECT_EQ(after[i].err.find(kReadingNote, note + 1), std::string::npos) << after[i].err;
    EXPECT_LT(took, std::chrono::seconds(10)) << commands[i][0];  // no waiting on the stale port
  }

  // A prefix of the cell's id gives what its id gives.
  EXPECT_EQ(Comparable(after[11].out), Comparable(after[10].out));
  EXPECT_EQ(Comparable(live[11].out), Comparable(live[10].out));

  // And the values are the database's.
  EXPECT_THAT(after[1].out, HasSubstr("tiny: 2 cells: 2 succeeded"));
  const nlohmann::json results = nlohmann::json::parse(after[4].out);
  ASSERT_EQ(results["results"].size(), 2u);
  for (const auto& result : results["results"]) {
    const std::string id = result["cell"]["id"];
    EXPECT_EQ(result["cell"]["state"], "CELL_STATE_SUCCEEDED");
    double last_loss = 0;
    testing::ForEachRow(data_ / "onset.db",
                        "SELECT m.value FROM metrics m JOIN cells c ON c.id = m.cell_id WHERE "
                        "c.hash = ? AND m.name = 'train/loss' ORDER BY m.tokens DESC LIMIT 1",
                        {id},
                        [&](sqlite3_stmt* row) { last_loss = sqlite3_column_double(row, 0); });
    EXPECT_DOUBLE_EQ(result["final_metrics"]["train/loss"].get<double>(), last_loss) << id;
  }
  // Each cell's final loss, in the exported curve and in the comparison.
  std::map<std::string, std::pair<int64_t, double>> last_point;  // cell -> (tokens, value)
  std::istringstream exported(after[8].out);
  for (std::string line; std::getline(exported, line);) {
    const nlohmann::json row = nlohmann::json::parse(line);
    const std::pair<int64_t, double> point{row["tokens"].get<int64_t>(),
                                           row["value"].get<double>()};
    auto [it, added] = last_point.emplace(row["cell_id"].get<std::string>(), point);
    if (!added && point.first > it->second.first) it->second = point;
  }
  ASSERT_EQ(last_point.size(), 2u);
  const nlohmann::json compared = nlohmann::json::parse(after[5].out);
  ASSERT_EQ(compared["groups"].size(), 2u);
  for (const auto& group : compared["groups"]) {
    ASSERT_EQ(group["cells"].size(), 1u);
    const std::string id = group["cells"][0]["cell_id"];
    ASSERT_TRUE(last_point.count(id)) << id;
    EXPECT_DOUBLE_EQ(group["cells"][0]["final"].get<double>(), last_point[id].second) << id;
  }
  int csv_rows = -1;  // the header
  int db_points = 0;
  std::istringstream csv(after[7].out);
  for (std::string line; std::getline(csv, line);) ++csv_rows;
  testing::ForEachRow(data_ / "onset.db", "SELECT COUNT(*) FROM metrics", {},
                      [&](sqlite3_stmt* row) { db_points = sqlite3_column_int(row, 0); });
  EXPECT_EQ(csv_rows, db_points);
  EXPECT_EQ(after[9].out.rfind("<svg", 0), 0u);
  const nlohmann::json heads = nlohmann::json::parse(after[10].out);
  EXPECT_EQ(heads["cell_id"], cells[0]);
  int rh_scores = 0;
  testing::ForEachRow(data_ / "onset.db",
                      "SELECT COUNT(DISTINCT m.name) FROM metrics m JOIN cells c ON "
                      "c.id = m.cell_id WHERE c.hash = ? AND m.name LIKE 'rh/score/%'",
                      {cells[0]},
                      [&](sqlite3_stmt* row) { rh_scores = sqlite3_column_int(row, 0); });
  EXPECT_EQ(heads["heads"].size(), static_cast<size_t>(rh_scores));
  std::string last_line;
  testing::ForEachRow(data_ / "onset.db",
                      "SELECT l.text FROM log_lines l JOIN attempts a ON a.id = l.attempt_id "
                      "JOIN cells c ON c.id = a.cell_id WHERE c.hash = ? ORDER BY l.line DESC "
                      "LIMIT 1",
                      {cells[0]}, [&](sqlite3_stmt* row) { last_line = testing::Text(row, 0); });
  ASSERT_FALSE(last_line.empty());
  EXPECT_THAT(after[12].out, HasSubstr(last_line));
  EXPECT_THAT(after[15].out, HasSubstr("2 succeeded"));

  // Without the address file at all (the run ended cleanly): the same.
  fs::remove(data_ / "coordinator.addr");
  const Ran clean = Onset(commands[1]);
  EXPECT_EQ(clean.code, 0) << clean.err;
  EXPECT_EQ(Comparable(clean.out), Comparable(live[1].out));
  EXPECT_THAT(clean.err, HasSubstr(kReadingNote));

  // Commands that change studies need a coordinator: exit 1, saying what to do, nothing written.
  for (const std::vector<std::string>& write :
       std::vector<std::vector<std::string>>{{"cancel", "tiny"},
                                             {"rerun", "tiny", "--state", "succeeded"},
                                             {"submit", "tiny.yaml"},
                                             {"submit", "--dry-run", "tiny.yaml"}}) {
    const Ran refused = Onset(write);
    EXPECT_EQ(refused.code, 1) << write[0];
    EXPECT_THAT(refused.err, HasSubstr("onset run FILE")) << write[0];
    EXPECT_THAT(refused.err, HasSubstr("onset " + write[0])) << write[0];
    EXPECT_EQ(refused.out, "") << write[0];
  }
  EXPECT_EQ(StateCounts(), (std::map<std::string, int>{{"succeeded", 2}}));
}

// `onset dashboard` on the finished data, left open while another `onset run` adds a cell: the
// run is not disturbed, and the page's API shows its commits as they land.
TEST_F(AfterRunTest, TheDashboardServesTheDataReadOnlyWhileARunAddsToIt) {
  std::string missing;
  if (!HaveBinaries({"onset", "onset-train"}, &missing)) GTEST_SKIP() << missing << " not built";
  ASSERT_NO_FATAL_FAILURE(RunStudy("tiny.yaml"));
  absl::StatusOr<std::string> token = common::ReadTokenFile((data_ / "onsetd.token").string());
  ASSERT_TRUE(token.ok()) << token.status();

  Child dashboard =
      Start(launcher_, "onset", {"dashboard", "--http", "127.0.0.1:0"}, dir_.string());
  ASSERT_NE(dashboard.process, nullptr);
  std::string url;
  for (auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
       url.empty() && std::chrono::steady_clock::now() < deadline;) {
    url = dashboard.Out();
    if (url.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_FALSE(url.empty()) << dashboard.process->StderrTail();
  url = url.substr(0, url.find('\n'));
  // http://127.0.0.1:PORT/#token=TOKEN&study=tiny
  const std::string prefix = "http://127.0.0.1:";
  ASSERT_EQ(url.rfind(prefix, 0), 0u) << url;
  const std::string address = url.substr(7, url.find('/', 7) - 7);
  EXPECT_EQ(url.substr(url.find('/', 7)), "/#token=" + *token + "&study=tiny");

  auto [status, body] = HttpGet(address, "/api/studies/tiny", *token);
  ASSERT_EQ(status, 200) << body;
  EXPECT_EQ(nlohmann::json::parse(body)["cells"].size(), 2u);
  EXPECT_EQ(HttpGet(address, "/api/studies", "").first, 401);
  EXPECT_EQ(HttpGet(address, "/api/studies", *token + "0").first, 401);

  // One more cell, by a run that starts while the dashboard holds the database open.
  std::string edited = kTinyStudy;
  edited.replace(edited.find("tokens: [20K]"), 13, "tokens: [10K]");
  edited.replace(edited.find(R"(arch: [full, "swa:1"])"), 21, "arch: [full]");
  std::ofstream(dir_ / "tiny-more.yaml") << edited;
  const Ran more = Onset({"run", "tiny-more.yaml", "--workers", "1", "--no-results"});
  ASSERT_EQ(more.code, 0) << more.err;
  EXPECT_THAT(more.err, HasSubstr("1 cell, 1 new"));
  EXPECT_EQ(more.out, "");  // --no-results: the answer is left to onset compare

  std::tie(status, body) = HttpGet(address, "/api/studies/tiny", *token);
  ASSERT_EQ(status, 200) << body;
  const nlohmann::json study = nlohmann::json::parse(body);
  ASSERT_EQ(study["cells"].size(), 3u) << body;
  EXPECT_EQ(StateCounts(), (std::map<std::string, int>{{"succeeded", 3}}));
  const Ran after = Onset({"status", "tiny"});
  EXPECT_EQ(after.code, 0) << after.err;
  EXPECT_THAT(after.out, HasSubstr("tiny: 3 cells: 3 succeeded"));

  ASSERT_EQ(::kill(dashboard.process->pid(), SIGINT), 0);
  ASSERT_TRUE(dashboard.process->WaitFor(std::chrono::seconds(30)));
  EXPECT_EQ(dashboard.process->Wait().exit_code, 130) << dashboard.process->StderrTail();
}

TEST_F(AfterRunTest, ADataDirectoryElsewhereIsFoundByFlagOrEnvironment) {
  std::string missing;
  if (!HaveBinaries({"onset", "onset-train"}, &missing)) GTEST_SKIP() << missing << " not built";
  // The run keeps its data in runs/a, named by the flag after the subcommand.
  const fs::path kept = dir_ / "runs" / "a";
  const Ran run = Onset({"run", "tiny.yaml", "--workers", "2", "--data-dir", kept.string()});
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_TRUE(fs::exists(kept / "onset.db"));
  EXPECT_FALSE(fs::exists(data_));  // nothing in ./onset-data

  // From another directory: the flag (before or after the command's name) or ONSET_DATA_DIR.
  const fs::path elsewhere = dir_ / "elsewhere";
  fs::create_directories(elsewhere);
  const auto onset_in = [&](std::vector<std::string> args,
                            std::map<std::string, std::string> env = {}) {
    Child child = Start(launcher_, "onset", std::move(args), elsewhere.string(), std::move(env));
    return Finish(child, std::chrono::duration_cast<std::chrono::milliseconds>(kRunTimeout));
  };
  const Ran by_flag = onset_in({"status", "tiny", "--data-dir", kept.string()});
  EXPECT_EQ(by_flag.code, 0) << by_flag.err;
  EXPECT_THAT(by_flag.out, HasSubstr("tiny: 2 cells: 2 succeeded"));
  EXPECT_THAT(by_flag.err, HasSubstr("reading " + (kept / "onset.db").string()));
  const Ran flag_first = onset_in({"--data-dir", kept.string(), "results", "tiny", "--json"});
  EXPECT_EQ(flag_first.code, 0) << flag_first.err;
  EXPECT_EQ(nlohmann::json::parse(flag_first.out)["results"].size(), 2u);
  const Ran by_env = onset_in({"status", "tiny"}, {{"ONSET_DATA_DIR", kept.string()}});
  EXPECT_EQ(by_env.code, 0) << by_env.err;
  EXPECT_EQ(by_env.out, by_flag.out);
  // The flag wins over the environment.
  const Ran both = onset_in({"status", "tiny", "--data-dir", kept.string()},
                            {{"ONSET_DATA_DIR", (dir_ / "nowhere").string()}});
  EXPECT_EQ(both.code, 0) << both.err;
  // Neither: ./onset-data of that directory, which holds nothing.
  if (!Listening(7070)) {
    const Ran neither = onset_in({"status", "tiny"});
    EXPECT_EQ(neither.code, 1);
    EXPECT_THAT(neither.err, HasSubstr("no onset-data/onset.db"));
  }
  const Ran no_dashboard = onset_in({"dashboard", "--http", "127.0.0.1:0"});
  EXPECT_EQ(no_dashboard.code, 1);
  EXPECT_THAT(no_dashboard.err, HasSubstr("no database onset-data/onset.db"));
}

// WSD budgets sharing one trunk per arch: the plan onset check must make as onsetd does.
constexpr char kWsdStudy[] = R"(name: wsd
model: {layers: 2, d_model: 64, heads: 2, seq_len: 128}
grid:
  arch: [full, "swa:1"]
  window: [16]
  pos: [rope]
  tokens: [500K, 1M, 2M]
  seeds: 2
train: {lr: 3e-3, schedule: wsd, decay_fraction: 0.2, warmup_tokens: 200K, batch_tokens: 4096,
        micro_batch: 32}
data: {}
eval: {every_tokens: 250K, heldout_seqs: 4, niah_lengths: [64, 128], niah_samples: 4}
)";

TEST_F(AfterRunTest, CheckPlansAStudyWithoutACoordinatorExactlyAsOnsetdWould) {
  std::string missing;
  if (!HaveBinaries({"onset", "onsetd"}, &missing)) GTEST_SKIP() << missing << " not built";
  std::ofstream(dir_ / "wsd.yaml") << kWsdStudy;
  // No coordinator, no data directory: check needs neither.
  const std::vector<std::string> throughput = {"--peak-flops", "1e15", "--mfu", "0.4"};
  std::vector<std::string> args = {"check", "wsd.yaml", "--json"};
  args.insert(args.end(), throughput.begin(), throughput.end());
  const Ran offline = Onset(args);
  ASSERT_EQ(offline.code, 0) << offline.err;
  EXPECT_FALSE(fs::exists(data_));

  // The same file previewed by a real onsetd on an empty database, with the shared checkpoint
  // directory that WSD branches need (as `onset run` has).
  const fs::path db = dir_ / "d" / "onset.db";
  fs::create_directories(db.parent_path());
  Child daemon = Start(
      launcher_, "onsetd",
      {"--db", db.string(), "--listen", "127.0.0.1:0", "--address-file",
       (dir_ / "d" / "addr").string(), "--checkpoint-root", (dir_ / "d" / "checkpoints").string()});
  const std::string address = WaitForFile(dir_ / "d" / "addr");
  ASSERT_FALSE(address.empty()) << daemon.process->StderrTail();
  args = {"submit",        "--dry-run",
          "wsd.yaml",      "--json",
          "--coordinator", address.substr(0, address.find('\n')),
          "--token-file",  (dir_ / "d" / "onsetd.token").string()};
  args.insert(args.end(), throughput.begin(), throughput.end());
  const Ran online = Onset(args);
  ASSERT_EQ(online.code, 0) << online.err;
  EXPECT_EQ(daemon.process->Terminate(std::chrono::seconds(10)).exit_code, 0);

  const nlohmann::json a = nlohmann::json::parse(offline.out);
  const nlohmann::json b = nlohmann::json::parse(online.out);
  for (const char* key : {"cells", "new_cell_ids", "tokens_to_train", "tokens_without_sharing",
                          "sharing_notes", "cost", "cells_added"}) {
    EXPECT_EQ(a[key], b[key]) << key;
  }
  // 12 grid points and 4 trunks: the 3 budgets of each (arch, seed) share one.
  EXPECT_EQ(a["cells"].size(), 16u);
  EXPECT_GT(a["cost"]["total"]["flops"].get<double>(), 0);
  EXPECT_GT(a["cost"]["total"]["device_hours"].get<double>(), 0);
  // int64 fields are JSON strings.
  EXPECT_LT(std::stoll(a["tokens_to_train"].get<std::string>()),
            std::stoll(a["tokens_without_sharing"].get<std::string>()));
  // FLOPs over 40% of 1e15 FLOP/s.
  EXPECT_NEAR(a["cost"]["total"]["device_hours"].get<double>(),
              a["cost"]["total"]["flops"].get<double>() / 4e14 / 3600, 1e-9);

  // Text: the cells, then the cost.
  const Ran text = Onset({"check", "wsd.yaml"});
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_THAT(text.out, HasSubstr("dry run, nothing written"));
  EXPECT_THAT(text.out, HasSubstr("DEVICE-HOURS"));
  EXPECT_THAT(text.out, HasSubstr("--peak-flops and --mfu"));
  // A bad file or throughput is bad input.
  EXPECT_EQ(Onset({"check", "wsd.yaml", "--mfu", "0.4"}).code, 2);
  std::ofstream(dir_ / "bad.yaml") << "name: bad\ngrid: {arch: [nope]}\n";
  EXPECT_EQ(Onset({"check", "bad.yaml"}).code, 2);
  // submit --dry-run with no coordinator says where to turn.
  if (!Listening(7070)) {
    const Ran no_coordinator = Onset({"submit", "--dry-run", "wsd.yaml"});
    EXPECT_EQ(no_coordinator.code, 1);
    EXPECT_THAT(no_coordinator.err, HasSubstr("onset check FILE"));
  }
}

TEST_F(AfterRunTest, NothingToReadIsAClearError) {
  std::string missing;
  if (!HaveBinaries({"onset"}, &missing)) GTEST_SKIP() << missing << " not built";

  // Nothing at all here: the default address must answer.
  if (!Listening(7070)) {
    const Ran nothing = Onset({"status", "tiny"});
    EXPECT_EQ(nothing.code, 1);
    EXPECT_THAT(nothing.err, HasSubstr("no coordinator answers at 127.0.0.1:7070 and there is "
                                       "no onset-data/onset.db"));
    EXPECT_THAT(nothing.err, HasSubstr("onset run FILE"));
  }
  const Ran no_dashboard = Onset({"dashboard", "--http", "127.0.0.1:0"});
  EXPECT_EQ(no_dashboard.code, 1);
  EXPECT_THAT(no_dashboard.err, HasSubstr("no database onset-data/onset.db"));

  // A stale address file and no database.
  fs::create_directories(data_);
  const std::string stale = "127.0.0.1:" + std::to_string(ClosedPort());
  std::ofstream(data_ / "coordinator.addr") << stale << "\n";
  const Ran gone = Onset({"results", "tiny", "--json"});
  EXPECT_EQ(gone.code, 1);
  EXPECT_THAT(gone.err, HasSubstr("nothing answers at " + stale));
  EXPECT_THAT(gone.err, HasSubstr("no onset-data/onset.db"));
  EXPECT_EQ(gone.out, "");

  // A database of another schema version is refused, and left as it was.
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((data_ / "onset.db").c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "CREATE TABLE t (x); PRAGMA user_version = 9999;", nullptr, nullptr,
                         nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"status", "tiny"}, {"dashboard", "--http", "127.0.0.1:0"}}) {
    const Ran newer = Onset(args);
    EXPECT_EQ(newer.code, 1) << args[0];
    EXPECT_THAT(newer.err, HasSubstr("onset-data/onset.db has schema version 9999, newer"))
        << args[0];
  }
  int version = 0;
  testing::ForEachRow(data_ / "onset.db", "PRAGMA user_version", {},
                      [&](sqlite3_stmt* row) { version = sqlite3_column_int(row, 0); });
  EXPECT_EQ(version, 9999);

  // The dashboard stays on loopback.
  const Ran exposed = Onset({"dashboard", "--http", "0.0.0.0:0"});
  EXPECT_EQ(exposed.code, 2);
  EXPECT_THAT(exposed.err, HasSubstr("loopback"));
}

}  // namespace
}  // namespace onset
