// A trainer's output, however unruly, must not cost its cell nor its log: invalid UTF-8 on
// stderr, bad metric lines, floods and huge lines, with the real onsetd, onset-worker and onset
// on loopback. The trainer is a shell script each test writes, run by the worker in place of
// onset-train. Skips when a binary is missing from ONSET_BIN_DIR.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cli/client/study_client.h"
#include "common/utf8.h"
#include "tests/integration/harness.h"

namespace onset {
namespace {

namespace fs = std::filesystem;
using testing::Child;
using ::testing::HasSubstr;
using testing::HaveBinaries;
using ::testing::Not;
using testing::Start;
using worker::PosixProcessLauncher;

constexpr auto kTimeout = std::chrono::seconds(90);

// One cell; the study's model is never trained, the script stands in for onset-train.
constexpr char kStudy[] = R"(name: unruly
model: {layers: 2, d_model: 32, heads: 2, seq_len: 64}
train: {batch_tokens: 1024, micro_batch: 16}
grid:
  arch: [full]
  tokens: [4096]
  seeds: 1
)";

class TrainerOutputTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string missing;
    if (!HaveBinaries({"onsetd", "onset-worker", "onset"}, &missing)) {
      GTEST_SKIP() << missing << " not built";
    }
    dir_ = fs::temp_directory_path() /
           ("onset-unruly-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    // A short lease: a cell whose worker cannot report its end is requeued within seconds.
    daemon_ = testing::StartDaemon(
        launcher_, dir_,
        {"--lease-ttl-ms", "3000", "--heartbeat-interval-ms", "200", "--retry-backoff-ms", "100"});
    ASSERT_FALSE(daemon_.address.empty() || daemon_.token.empty());
    client_ = std::make_unique<cli::StudyClient>(
        daemon_.address, common::ClientSecurity{daemon_.token, ""}, std::chrono::seconds(10));
  }
  void TearDown() override {
    if (worker_.process) worker_.process->Terminate(std::chrono::seconds(10));
    if (daemon_.child.process) daemon_.child.process->Terminate(std::chrono::seconds(10));
    if (!HasFailure() && !dir_.empty()) fs::remove_all(dir_);
  }

  fs::path Db() const { return dir_ / "onset.db"; }

  // Runs the study's one cell with a trainer made of the shell commands `body`, and waits until
  // the cell has ended; returns its state ("" when it did not end in time).
  std::string RunCell(const std::string& body) {
    const fs::path trainer = dir_ / "trainer.sh";
    std::ofstream(trainer) << "#!/bin/sh\n" << body << "\n";
    fs::permissions(trainer, fs::perms::owner_all);
    worker_ =
        Start(launcher_, "onset-worker",
              {"--coordinator", daemon_.address, "--work-dir", (dir_ / "work").string(),
               "--trainer", trainer.string(), "--slots", "1", "--token-file", daemon_.token_file});
    EXPECT_NE(worker_.process, nullptr);
    absl::StatusOr<v1::SubmitStudyResponse> submitted = client_->Submit("unruly.yaml", kStudy);
    EXPECT_TRUE(submitted.ok()) << submitted.status();
    if (!submitted.ok()) return "";
    EXPECT_EQ(submitted->cells_size(), 1);
    const auto deadline = std::chrono::steady_clock::now() + kTimeout;
    while (std::chrono::steady_clock::now() < deadline) {
      absl::StatusOr<v1::GetStudyResponse> study = client_->Get("unruly");
      if (study.ok() && study->cells_size() == 1) {
        cell_ = study->cells(0);
        const v1::CellState state = cell_.state();
        if (state != v1::CELL_STATE_QUEUED && state != v1::CELL_STATE_RUNNING &&
            state != v1::CELL_STATE_BACKOFF) {
          return v1::CellState_Name(state);
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    ADD_FAILURE() << "the cell did not end in time:\n"
                  << cell_.DebugString() << "\nworker:\n"
                  << worker_.process->StderrTail();
    return "";
  }

  // What `onset logs CELL` prints (the first attempt's lines), and its exit status.
  std::string Logs(int* exit_code) {
    Child logs = Start(launcher_, "onset",
                       {"--coordinator", daemon_.address, "--token-file", daemon_.token_file,
                        "logs", cell_.id(), "--attempt", "1"});
    *exit_code = logs.process ? logs.process->Wait().exit_code : -1;
    if (*exit_code != 0 && logs.process) ADD_FAILURE() << logs.process->StderrTail();
    return logs.Out();
  }

  fs::path dir_;
  PosixProcessLauncher launcher_;
  testing::Daemon daemon_;
  Child worker_;
  std::unique_ptr<cli::StudyClient> client_;
  v1::Cell cell_;
};

TEST_F(TrainerOutputTest, InvalidUtf8OnStderrNeitherFailsTheCellNorLosesItsLog) {
  const std::string state = RunCell(R"(printf 'before\n' >&2
printf 'bad byte \377 and a cut euro \342\202\n' >&2
printf 'after\n' >&2
echo '{"event":"train","tokens":1024,"metrics":{"train/loss":3.5}}'
exit 0)");
  EXPECT_EQ(state, "CELL_STATE_SUCCEEDED") << cell_.DebugString();
  EXPECT_EQ(cell_.attempts(), 1);
  int exit_code = 0;
  const std::string log = Logs(&exit_code);
  EXPECT_EQ(exit_code, 0);
  EXPECT_TRUE(common::IsValidUtf8(log));
  EXPECT_THAT(log, HasSubstr("before\nbad byte \xEF\xBF\xBD and a cut euro \xEF\xBF\xBD\nafter\n"));
}

TEST_F(TrainerOutputTest, ALineCutAtTheLengthBoundStaysReadable) {
  // 3000 euro signs: 9000 bytes, over the 8 KiB bound, which falls inside a character.
  const std::string state = RunCell(R"(printf 'first\n' >&2
i=0; while [ $i -lt 3000 ]; do printf '\342\202\254' >&2; i=$((i+1)); done
printf '\nlast\n' >&2
exit 0)");
  EXPECT_EQ(state, "CELL_STATE_SUCCEEDED") << cell_.DebugString();
  int exit_code = 0;
  const std::string log = Logs(&exit_code);
  EXPECT_EQ(exit_code, 0);
  EXPECT_TRUE(common::IsValidUtf8(log));
  EXPECT_THAT(log, HasSubstr("first\n\xE2\x82\xAC\xE2\x82\xAC"));
  EXPECT_THAT(log, HasSubstr("\xE2\x82\xAC [... cut: the line had 9000 bytes]\nlast\n"));
}

TEST_F(TrainerOutputTest, LinesStoredWithBrokenUtf8AreReadableAgain) {
  const std::string state = RunCell("printf 'one\\ntwo\\nthree\\n' >&2; exit 0");
  EXPECT_EQ(state, "CELL_STATE_SUCCEEDED") << cell_.DebugString();
  // As a coordinator that cut lines inside characters left them: 'two' loses half a character.
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(Db().c_str(), &db), SQLITE_OK);
  sqlite3_busy_timeout(db, 5000);
  char* error = nullptr;
  EXPECT_EQ(sqlite3_exec(db,
                         "UPDATE log_lines SET text = CAST(X'74776FE282' AS TEXT) "
                         "WHERE text = 'two'",
                         nullptr, nullptr, &error),
            SQLITE_OK)
      << (error ? error : "");
  sqlite3_free(error);
  EXPECT_EQ(sqlite3_changes(db), 1);
  sqlite3_close(db);
  int exit_code = 0;
  const std::string log = Logs(&exit_code);
  EXPECT_EQ(exit_code, 0);
  EXPECT_THAT(log, HasSubstr("one\ntwo\xEF\xBF\xBD\nthree\n"));
}

TEST_F(TrainerOutputTest, BadMetricLinesCostOnlyTheirOwnPoints) {
  const std::string state = RunCell(R"(
echo '{"event":"train","tokens":1024,"metrics":{"train/loss":3.5}}'
echo '{"event":"train","tokens":-1,"metrics":{"train/loss":3.4}}'
echo '{"event":"train","tokens":18446744073709551615,"metrics":{"train/loss":3.3}}'
echo '{"event":"train","tokens":9223372036854775807,"metrics":{"train/loss":3.2}}'
echo '{"event":"train","tokens":2048,"metrics":{"":1.0,"train/loss":3.0}}'
name=$(head -c 10000000 /dev/zero | tr '\0' a)
printf '{"event":"eval","tokens":2048,"metrics":{"%s":1.0,"eval/heldout_loss":2.9}}\n' "$name"
sleep 1
echo '{"event":"done","tokens":3072,"metrics":{"train/loss":2.5}}'
exit 0)");
  EXPECT_EQ(state, "CELL_STATE_SUCCEEDED") << cell_.DebugString();
  EXPECT_EQ(cell_.attempts(), 1);
  // Every good point, and no other.
  std::vector<std::string> points;
  testing::ForEachRow(Db(), "SELECT name, tokens FROM metrics ORDER BY name, tokens", {},
                      [&](sqlite3_stmt* row) {
                        points.push_back(testing::Text(row, 0) + "@" + testing::Text(row, 1));
                      });
  EXPECT_THAT(points, ::testing::ElementsAre("eval/heldout_loss@2048", "train/loss@1024",
                                             "train/loss@2048", "train/loss@3072"));
  // Progress never showed an absurd token count.
  EXPECT_GE(cell_.tokens_done(), 0);
  EXPECT_LE(cell_.tokens_done(), 3072);
  int exit_code = 0;
  const std::string log = Logs(&exit_code);
  EXPECT_THAT(log, HasSubstr("dropped 5 metric points: first: tokens -1: must be "
                             "0..1000000000000000"));
}

// The null rule of the metrics line (base/metrics_line.h): a value the trainer could not write as
// a number (a diverged loss) reaches the database as "not finite", NULL.
TEST_F(TrainerOutputTest, ANullMetricIsStoredAsNotFinite) {
  const std::string state = RunCell(R"(
echo '{"event":"train","tokens":1024,"metrics":{"train/loss":3.5}}'
echo '{"event":"diverged","tokens":2048,"metrics":{"train/loss":null,"train/lr":0.001}}'
exit 3)");
  EXPECT_EQ(state, "CELL_STATE_DIVERGED") << cell_.DebugString();
  std::vector<std::string> points;
  testing::ForEachRow(Db(),
                      "SELECT name, tokens, coalesce(value, 'NULL') FROM metrics "
                      "ORDER BY name, tokens",
                      {}, [&](sqlite3_stmt* row) {
                        points.push_back(testing::Text(row, 0) + "@" + testing::Text(row, 1) + "=" +
                                         testing::Text(row, 2));
                      });
  EXPECT_THAT(points, ::testing::ElementsAre("train/loss@1024=3.5", "train/loss@2048=NULL",
                                             "train/lr@2048=0.001"));
}

// The lines of `log` that start with `prefix`.
std::vector<std::string> LinesStartingWith(const std::string& log, const std::string& prefix) {
  std::vector<std::string> out;
  std::istringstream in(log);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(prefix, 0) == 0) out.push_back(line);
  }
  return out;
}

TEST_F(TrainerOutputTest, AStderrFloodKeepsTheNewest20000Lines) {
  const std::string state = RunCell("seq 1 30000 | sed 's/^/flood /' >&2; exit 0");
  EXPECT_EQ(state, "CELL_STATE_SUCCEEDED") << cell_.DebugString();
  int exit_code = 0;
  const std::vector<std::string> flood = LinesStartingWith(Logs(&exit_code), "flood ");
  EXPECT_EQ(exit_code, 0);
  // The coordinator keeps the newest 20,000 lines of an attempt; a note of the worker's (on
  // lines it had to drop) may take the place of the oldest.
  ASSERT_GE(flood.size(), 19'999u);
  ASSERT_LE(flood.size(), 20'000u);
  EXPECT_EQ(flood.back(), "flood 30000");
  const int first = 30'000 - static_cast<int>(flood.size()) + 1;
  for (size_t i = 0; i < flood.size(); ++i) {
    ASSERT_EQ(flood[i], "flood " + std::to_string(first + static_cast<int>(i))) << i;
  }
}

TEST_F(TrainerOutputTest, AHugeStderrLineIsCutAndTheRestOfTheLogKept) {
  const std::string state = RunCell(R"(echo before >&2
head -c 5000000 /dev/zero | tr '\0' x >&2
printf '\nafter\n' >&2
exit 0)");
  EXPECT_EQ(state, "CELL_STATE_SUCCEEDED") << cell_.DebugString();
  int exit_code = 0;
  const std::string log = Logs(&exit_code);
  EXPECT_EQ(exit_code, 0);
  EXPECT_THAT(log, HasSubstr("before\nxxxxxxxx"));
  EXPECT_THAT(log, HasSubstr("x [... cut: the line had 5000000 bytes]\nafter\n"));
  EXPECT_LT(log.size(), 10'000u);
}

TEST_F(TrainerOutputTest, ALogOfLongLinesIsReadWhole) {
  // 6,000 lines of 1,000 bytes: more than one reply of gRPC's default 4 MiB could carry.
  const std::string state = RunCell(
      "line=$(head -c 1000 /dev/zero | tr '\\0' y); i=1; "
      "while [ $i -le 6000 ]; do echo \"$i $line\"; i=$((i+1)); done >&2; exit 0");
  EXPECT_EQ(state, "CELL_STATE_SUCCEEDED") << cell_.DebugString();
  int exit_code = 0;
  const std::string log = Logs(&exit_code);
  EXPECT_EQ(exit_code, 0);
  const std::vector<std::string> lines = LinesStartingWith(log, "");
  ASSERT_EQ(lines.size(), 6'000u);
  EXPECT_EQ(lines.front().substr(0, 4), "1 yy");
  EXPECT_EQ(lines.back().substr(0, 7), "6000 yy");
}

}  // namespace
}  // namespace onset
