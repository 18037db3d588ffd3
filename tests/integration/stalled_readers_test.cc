// Readers that stop reading, against the real onsetd: every streamed answer waits for its reader
// at most --stalled-reader-limit-ms, so that a client that never reads cannot keep a submission's
// place and memory, or a watch's thread, for longer. Skips when onsetd or onset is not built.
#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/grpc_auth.h"
#include "onset/v1/onset.grpc.pb.h"
#include "tests/integration/harness.h"

namespace onset {
namespace {

namespace v1 = ::onset::v1;
using ::testing::HasSubstr;
using Clock = std::chrono::steady_clock;

constexpr int kLimitMs = 2000;
constexpr int kCells = 30'000;  // an answer of several MB: more than the flow-control windows
constexpr char kStalled[] = "waited longer than its limit for its reader";

// 100 seeds x train.lr values of a tiny model: exactly `cells` cells, never trained here.
std::string StudyOf(int cells) {
  std::string yaml =
      "name: wide\nmodel: {layers: 1, d_model: 16, heads: 2, seq_len: 16}\n"
      "train: {tokens: 1M, batch_tokens: 512}\neval: {niah_samples: 0}\ngrid:\n  seeds: 100\n"
      "  train.lr: [";
  for (int i = 0; i < cells / 100; ++i) {
    char lr[32];
    std::snprintf(lr, sizeof lr, "%.7g", 1e-4 * (1.0 + i / 1000.0));
    yaml += (i ? ", " : "") + std::string(lr);
  }
  return yaml + "]\n";
}

// The resident memory of process `pid` in MB (VmRSS), or -1.
double RssMb(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stod(line.substr(6)) / 1024;
  }
  return -1;
}

// How many times onsetd's log says it cancelled a call whose reader stopped.
int StalledCalls(const testing::Daemon& daemon) {
  const std::string log = daemon.child.process->StderrTail();
  int n = 0;
  for (size_t at = log.find(kStalled); at != std::string::npos; at = log.find(kStalled, at + 1)) {
    ++n;
  }
  return n;
}

class StalledClientsTest : public testing::OnsetdTest {
 protected:
  StalledClientsTest() : OnsetdTest("onset-stalled") {}

  void StartStalling() {
    daemon_ = testing::StartDaemon(launcher_, dir_,
                                   {"--stalled-reader-limit-ms", std::to_string(kLimitMs)});
    std::ofstream(dir_ / "wide.yaml") << StudyOf(kCells);
  }

  // A client that reads nothing, on a connection of its own: it never grows its flow-control
  // windows (no BDP probing), so that what onsetd sends it waits after the first few KB.
  std::unique_ptr<v1::StudyService::Stub> StalledStub() {
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_HTTP2_BDP_PROBE, 0);
    args.SetInt(GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES, 16 * 1024);
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    return v1::StudyService::NewStub(
        grpc::CreateCustomChannel(daemon_.address, grpc::InsecureChannelCredentials(), args));
  }

  // A context with the token and a deadline past the test's waits.
  std::unique_ptr<grpc::ClientContext> Context() const {
    auto context = std::make_unique<grpc::ClientContext>();
    context->AddMetadata("authorization", "Bearer " + daemon_.token);
    context->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(120));
    return context;
  }
};

// Row 9 of the issue on operating onsetd: two dry runs whose answers are never read held both
// submission places (and ~190 MB) until their clients went away; every other submission waited
// 60 s and was refused. Now each loses its call within the limit once its reader stops, the next
// submission is admitted, and the memory they held goes.
TEST_F(StalledClientsTest, DryRunsWhoseAnswersAreNeverReadFreeTheirPlacesAndMemory) {
  std::string missing;
  if (!testing::HaveBinaries({"onsetd", "onset"}, &missing))
    GTEST_SKIP() << missing << " not built";
  StartStalling();
  ASSERT_FALSE(daemon_.address.empty());
  const int pid = daemon_.child.process->pid();
  const double before = RssMb(pid);
  ASSERT_GT(before, 0);

  v1::SubmitStudyRequest request;
  request.set_source_name("wide.yaml");
  {
    std::ifstream in(dir_ / "wide.yaml");
    request.set_yaml(std::string(std::istreambuf_iterator<char>(in), {}));
  }
  request.set_dry_run(true);
  std::vector<std::unique_ptr<v1::StudyService::Stub>> stubs;
  std::vector<std::unique_ptr<grpc::ClientContext>> contexts;
  std::vector<std::unique_ptr<grpc::ClientReader<v1::SubmitStudyResponse>>> readers;
  for (int i = 0; i < 2; ++i) {
    stubs.push_back(StalledStub());
    contexts.push_back(Context());
    readers.push_back(stubs.back()->SubmitStudy(contexts.back().get(), request));  // never read
  }
  // Both take their places at once; a third submission then waits for one of them to let go.
  std::this_thread::sleep_for(std::chrono::seconds(1));
  std::ofstream(dir_ / "small.yaml") << StudyOf(200).replace(6, 4, "tiny");
  const auto asked = Clock::now();
  std::future<testing::Ran> third = std::async(std::launch::async, [&] {
    return Onset({"submit", (dir_ / "small.yaml").string()});
  });
  // Each stalled call holds its study's cells (and its place) until onsetd cancels it, a limit
  // after its reader stopped.
  double peak = before;
  for (auto until = Clock::now() + std::chrono::seconds(90);
       Clock::now() < until && StalledCalls(daemon_) < 2;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    peak = std::max(peak, RssMb(pid));
  }
  const auto both_cancelled =
      std::chrono::duration_cast<std::chrono::seconds>(Clock::now() - asked);
  EXPECT_EQ(StalledCalls(daemon_), 2) << daemon_.child.process->StderrTail();
  EXPECT_GE(peak, before + 100) << "the dry runs did not grow onsetd (" << before << " MB)";

  // The third got a place once the first was cancelled (after its planning and the limit), not
  // after 60 s.
  const testing::Ran ran = third.get();
  const auto waited = std::chrono::duration_cast<std::chrono::seconds>(Clock::now() - asked);
  EXPECT_EQ(ran.code, 0) << ran.err;
  EXPECT_THAT(ran.out, HasSubstr("200 cells, 200 new"));
  EXPECT_LT(waited.count(), 30) << "waited for a place";

  // The stalled answers end short, cancelled by onsetd, and what they held is given back.
  for (size_t i = 0; i < readers.size(); ++i) {
    v1::SubmitStudyResponse piece;
    int cells = 0;
    while (readers[i]->Read(&piece)) cells += piece.cells_size();
    EXPECT_LT(cells, kCells) << "call " << i;
    EXPECT_EQ(readers[i]->Finish().error_code(), grpc::StatusCode::CANCELLED) << "call " << i;
  }
  double after = RssMb(pid);
  for (auto until = Clock::now() + std::chrono::seconds(30);
       Clock::now() < until && after > before + 60;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    after = RssMb(pid);
  }
  EXPECT_LT(after, before + 60) << "onsetd: " << before << " MB before, " << peak
                                << " MB with the stalled answers";
  std::cerr << "onsetd's RSS: " << before << " MB before, " << peak << " MB stalled, " << after
            << " MB after (limit " << kLimitMs << " ms; both stalled calls cancelled after "
            << both_cancelled.count() << " s, the third submission done after " << waited.count()
            << " s)\n";
}

// A watch whose reader stops is ended by onsetd within the limit: the stream, read later, ends
// short of the study's snapshot with CANCELLED instead of waiting for changes for ever.
TEST_F(StalledClientsTest, AWatchWhoseReaderStopsEndsWithinTheLimit) {
  std::string missing;
  if (!testing::HaveBinaries({"onsetd", "onset"}, &missing))
    GTEST_SKIP() << missing << " not built";
  StartStalling();
  ASSERT_FALSE(daemon_.address.empty());
  const testing::Ran submitted = Onset({"submit", (dir_ / "wide.yaml").string()});
  ASSERT_EQ(submitted.code, 0) << submitted.err;

  auto stub = StalledStub();
  auto context = Context();
  v1::WatchStudyRequest request;
  request.set_study("wide");
  std::unique_ptr<grpc::ClientReader<v1::WatchStudyResponse>> reader =
      stub->WatchStudy(context.get(), request);  // not read for now
  const auto started = Clock::now();
  while (StalledCalls(daemon_) == 0 && Clock::now() - started < std::chrono::seconds(30)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(StalledCalls(daemon_), 1) << daemon_.child.process->StderrTail();
  EXPECT_LT(Clock::now() - started, std::chrono::milliseconds(kLimitMs) + std::chrono::seconds(15));
  v1::WatchStudyResponse message;
  int cells = 0;
  while (reader->Read(&message)) cells += message.snapshot().cells_size();
  EXPECT_LT(cells, kCells);
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::CANCELLED);
}

}  // namespace
}  // namespace onset
