// The real onsetd's webhook notifications (--notify-url-file), told to three local receivers at
// once: one that answers 200, one that answers 500 to everything, one that takes the request and
// never answers. The first gets, each once and in order, a cell failed for good, the study's end
// and the last live worker lost while cells wait, as JSON with a `text` line; the failing one is
// retried with backoff; the hanging one delays neither the others nor a lease; no secret path
// reaches the log or onsetd's command line; onsetd still stops cleanly. A URL on the command line
// (--notify-url), or in a file others may read, is refused at start. Skips when onsetd or onset
// is not built.
#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "tests/integration/harness.h"
#include "worker/coordinator_client.h"

namespace onset {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kStudy[] = R"(model: {layers: 2, d_model: 32, heads: 2, seq_len: 64}
train: {batch_tokens: 1K, micro_batch: 4}
eval: {every_tokens: 10K, heldout_seqs: 4, niah_lengths: [64], niah_samples: 2}
grid: {arch: [full, "swa:1"], window: [16], tokens: [20K], seeds: 1}
)";

// An HTTP/1.1 receiver on a loopback port: records each request's body, then answers `status`
// and closes, or (status 0) holds the connection unanswered until it stops.
class Receiver {
 public:
  explicit Receiver(int status) : status_(status) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    if (bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 && listen(fd_, 16) == 0 &&
        getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
      port_ = ntohs(addr.sin_port);
    }
    thread_ = std::thread([this] { Serve(); });
  }
  ~Receiver() {
    stop_ = true;
    thread_.join();
    for (int c : held_) close(c);
    close(fd_);
  }

  // A URL with a secret in its path, as Slack's are.
  std::string url() const {
    return "http://127.0.0.1:" + std::to_string(port_) + "/hooks/SECRETPATH?key=SECRETKEY";
  }
  std::vector<std::string> bodies() {
    std::lock_guard<std::mutex> lock(mu_);
    return bodies_;
  }
  int requests() {
    std::lock_guard<std::mutex> lock(mu_);
    return static_cast<int>(bodies_.size());
  }

 private:
  void Serve() {
    while (!stop_) {
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, 50) <= 0) continue;
      const int c = accept(fd_, nullptr, nullptr);
      if (c < 0) continue;
      std::string request;
      char buffer[4096];
      size_t body_at = std::string::npos, length = 0;
      while (!stop_) {
        pollfd q{c, POLLIN, 0};
        if (poll(&q, 1, 50) <= 0) continue;
        const ssize_t n = read(c, buffer, sizeof(buffer));
        if (n <= 0) break;
        request.append(buffer, static_cast<size_t>(n));
        if (body_at == std::string::npos &&
            (body_at = request.find("\r\n\r\n")) != std::string::npos) {
          body_at += 4;
          std::string lower = request.substr(0, body_at);
          for (char& ch : lower) ch = static_cast<char>(tolower(ch));
          const size_t cl = lower.find("content-length:");
          if (cl != std::string::npos) length = std::stoul(lower.substr(cl + 15));
        }
        if (body_at != std::string::npos && request.size() >= body_at + length) break;
      }
      if (body_at != std::string::npos) {
        std::lock_guard<std::mutex> lock(mu_);
        bodies_.push_back(request.substr(body_at, length));
      }
      if (status_ == 0) {
        held_.push_back(c);  // never answered
        continue;
      }
      const std::string reply = "HTTP/1.1 " + std::to_string(status_) +
                                " X\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok";
      (void)!write(c, reply.data(), reply.size());
      close(c);
    }
  }

  const int status_;
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::vector<int> held_;  // the serving thread's
  std::mutex mu_;
  std::vector<std::string> bodies_;
};

class NotifyTest : public testing::OnsetdTest {
 protected:
  NotifyTest() : OnsetdTest("onset-notify") {}

  std::string Write(const std::string& name) {
    const std::string path = (dir_ / (name + ".yaml")).string();
    std::ofstream(path) << "name: " << name << "\n" << kStudy;
    return path;
  }

  // A notify URL file holding `urls`, mode `mode`.
  std::string WriteUrls(const std::vector<std::string>& urls, mode_t mode = 0600) {
    const std::string path = (dir_ / "notify-urls").string();
    {
      std::ofstream out(path);
      out << "# webhooks of the lab\n";
      for (const std::string& url : urls) out << url << "\n";
    }
    EXPECT_EQ(chmod(path.c_str(), mode), 0);
    return path;
  }

  // onsetd started with `args` (on the test's database), which must exit within 30 s.
  testing::Ran RefusedStart(std::vector<std::string> args) {
    args.insert(args.end(), {"--db", (dir_ / "onset.db").string(), "--listen", "127.0.0.1:0"});
    testing::Child child = testing::Start(launcher_, "onsetd", std::move(args));
    return testing::Finish(child, std::chrono::seconds(30));
  }

  // The kinds `receiver` was sent, once it has at least `n` (30 s at most).
  static std::vector<nlohmann::json> WaitForEvents(Receiver& receiver, size_t n) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (receiver.bodies().size() < n && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    std::vector<nlohmann::json> out;
    for (const std::string& body : receiver.bodies()) {
      out.push_back(nlohmann::json::parse(body, nullptr, false));
    }
    return out;
  }
};

TEST_F(NotifyTest, EventsReachAWorkingReceiverWhateverTheOthersDo) {
  std::string missing;
  if (!testing::HaveBinaries({"onsetd", "onset"}, &missing))
    GTEST_SKIP() << missing << " not built";
  Receiver ok(200), failing(500), hanging(0);
  daemon_ = testing::StartDaemon(
      launcher_, dir_,
      {"--notify-url-file", WriteUrls({ok.url(), failing.url(), hanging.url()}), "--max-failures",
       "1", "--heartbeat-interval-ms", "200", "--lease-ttl-ms", "2000"});
  ASSERT_FALSE(daemon_.address.empty());
  // What every local user reads of onsetd names no URL.
  std::ifstream cmdline_file("/proc/" + std::to_string(daemon_.child.process->pid()) + "/cmdline",
                             std::ios::binary);
  const std::string cmdline((std::istreambuf_iterator<char>(cmdline_file)),
                            std::istreambuf_iterator<char>());
  EXPECT_THAT(cmdline, HasSubstr("--notify-url-file"));
  for (const char* secret : {"SECRET", "http://", "/hooks"}) {
    EXPECT_THAT(cmdline, Not(HasSubstr(secret)));
  }
  ASSERT_EQ(Onset({"submit", Write("told")}).code, 0);

  // A worker takes a cell and its trainer crashes: with --max-failures 1 it fails for good.
  auto client = worker::NewGrpcCoordinatorClient(daemon_.address, {daemon_.token, ""});
  auto registered = client->Register("notify-test", {"cpu:0"}, "test", "");
  ASSERT_TRUE(registered.ok()) << registered.status();
  auto lease = client->Lease(registered->worker_id, {"cpu:0"});
  ASSERT_TRUE(lease.ok() && lease->job.has_value()) << lease.status();
  const std::string failed_cell = lease->job->cell_id;
  worker::JobResult crashed;
  crashed.outcome = worker::JobOutcome::kFailed;
  crashed.exit_code = 1;
  crashed.reason = "exit code 1";
  const auto leased_at = std::chrono::steady_clock::now();
  ASSERT_TRUE(client->Finish(registered->worker_id, lease->job->lease_id, crashed).ok());
  // The hanging receiver holds a POST meanwhile; leases are not held up by it.
  EXPECT_LT(std::chrono::steady_clock::now() - leased_at, std::chrono::seconds(5));

  // The other cell cancelled: the study has ended.
  ASSERT_EQ(Onset({"cancel", "told"}).code, 0);
  std::vector<nlohmann::json> events = WaitForEvents(ok, 2);
  ASSERT_EQ(events.size(), 2u) << ok.bodies().size();
  EXPECT_EQ(events[0]["kind"], "cell_failed");
  EXPECT_EQ(events[0]["study"], "told");
  EXPECT_EQ(events[0]["cell_id"], failed_cell);
  EXPECT_THAT(events[0]["text"].get<std::string>(), HasSubstr("failed for good"));
  EXPECT_EQ(events[1]["kind"], "study_ended");
  EXPECT_EQ(events[1]["study"], "told");
  EXPECT_EQ(events[1]["cells_by_state"]["failed"], 1);
  EXPECT_EQ(events[1]["cells_by_state"]["cancelled"], 1);
  EXPECT_THAT(events[1]["text"].get<std::string>(), HasSubstr("\"told\" ended"));

  // Cells wait in another study and the only worker exits: the last live worker is lost.
  ASSERT_EQ(Onset({"submit", Write("waiting")}).code, 0);
  ASSERT_TRUE(client->Deregister(registered->worker_id).ok());
  events = WaitForEvents(ok, 3);
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[2]["kind"], "workers_lost");
  EXPECT_EQ(events[2]["cells_waiting"], 2);
  EXPECT_THAT(events[2]["text"].get<std::string>(), HasSubstr("no live worker"));

  // Nothing more for the working receiver; the failing one was tried again (backoff 1 s, 2 s).
  std::this_thread::sleep_for(std::chrono::seconds(4));
  EXPECT_EQ(ok.requests(), 3);
  EXPECT_GE(failing.requests(), 3) << "retries of the first event";
  EXPECT_EQ(nlohmann::json::parse(failing.bodies()[1])["kind"], "cell_failed");
  // It holds its first POST for the 10 s timeout; a slow machine may have reached the retry.
  EXPECT_GE(hanging.requests(), 1);
  EXPECT_EQ(nlohmann::json::parse(hanging.bodies()[0])["kind"], "cell_failed");

  // A POST held by the hanging receiver ends within its 10 s timeout.
  const auto stopping = std::chrono::steady_clock::now();
  const worker::ExitStatus stopped = daemon_.child.process->Terminate(std::chrono::seconds(30));
  EXPECT_TRUE(stopped.Succeeded()) << stopped.ToString();
  EXPECT_LT(std::chrono::steady_clock::now() - stopping, std::chrono::seconds(20));
  const std::string log = daemon_.child.process->StderrTail();
  EXPECT_THAT(log, HasSubstr("notifications to 3 URL(s)"));
  EXPECT_THAT(log, HasSubstr("HTTP 500"));
  EXPECT_THAT(log, Not(HasSubstr("SECRET")));
}

// A webhook URL on the command line is refused at start, saying why and what to do instead,
// without repeating the URL; so is a URL file that others may read.
TEST_F(NotifyTest, AUrlOnTheCommandLineOrInAFileOthersReadIsRefused) {
  std::string missing;
  if (!testing::HaveBinaries({"onsetd"}, &missing)) GTEST_SKIP() << missing << " not built";
  Receiver ok(200);
  testing::Ran flag = RefusedStart({"--notify-url", ok.url()});
  EXPECT_EQ(flag.code, 1);
  EXPECT_THAT(flag.err, HasSubstr("/proc/PID/cmdline"));
  EXPECT_THAT(flag.err, HasSubstr("--notify-url-file FILE"));
  EXPECT_THAT(flag.err, Not(HasSubstr("SECRET")));

  const std::string readable = WriteUrls({ok.url()}, 0644);
  testing::Ran file = RefusedStart({"--notify-url-file", readable});
  EXPECT_EQ(file.code, 1);
  EXPECT_THAT(file.err, HasSubstr("accessible by group or others"));
  EXPECT_THAT(file.err, HasSubstr("chmod 600 " + readable));
  EXPECT_THAT(file.err, Not(HasSubstr("SECRET")));

  const std::string bad = WriteUrls({"ftp://files.example/SECRET"});
  testing::Ran not_http = RefusedStart({"--notify-url-file", bad});
  EXPECT_EQ(not_http.code, 1);
  EXPECT_THAT(not_http.err, HasSubstr(bad + ":2: webhook URL ftp://files.example/"));
  EXPECT_THAT(not_http.err, Not(HasSubstr("SECRET")));
  EXPECT_EQ(ok.requests(), 0);
}

}  // namespace
}  // namespace onset
