// The real onsetd's Prometheus metrics: /metrics refuses a scrape without a token, serves the
// text format that `promtool check metrics` accepts to a read token made with `onset token
// create`, counts a study's cells by state and the Submit call; and a real Prometheus server
// (Debian's `prometheus`) scraping it on loopback with that read token, as
// docs/operating-onsetd.md prescribes, sees the queued cells, then the same cells cancelled. Skips
// when onsetd or onset is not built; the promtool and Prometheus parts skip when those are not
// installed (scripts/test installs them).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <thread>

#include "tests/integration/harness.h"

namespace onset {
namespace {

namespace fs = std::filesystem;
namespace beast = boost::beast;
namespace http = beast::http;

constexpr char kStudy[] = R"(name: watched
model: {layers: 2, d_model: 32, heads: 2, seq_len: 64}
train: {batch_tokens: 1K, micro_batch: 4}
eval: {every_tokens: 10K, heldout_seqs: 4, niah_lengths: [64], niah_samples: 2}
grid: {arch: [full, "swa:1"], window: [16], tokens: [20K], seeds: 1}
)";

struct HttpReply {
  int status = 0;  // 0: no reply
  std::string content_type;
  std::string body;
};

// GET http://`address``target` with a 10 s limit, with "Authorization: Bearer TOKEN" unless
// `token` is empty.
HttpReply Get(const std::string& address, const std::string& target, const std::string& token) {
  HttpReply reply;
  try {
    boost::asio::io_context io;
    const size_t colon = address.rfind(':');
    boost::asio::ip::tcp::resolver resolver(io);
    beast::tcp_stream stream(io);
    stream.expires_after(std::chrono::seconds(10));
    stream.connect(resolver.resolve(address.substr(0, colon), address.substr(colon + 1)));
    http::request<http::empty_body> request(http::verb::get, target, 11);
    request.set(http::field::host, address);
    if (!token.empty()) request.set(http::field::authorization, "Bearer " + token);
    http::write(stream, request);
    beast::flat_buffer buffer;
    http::response<http::string_body> response;
    http::read(stream, buffer, response);
    reply.status = response.result_int();
    reply.content_type = std::string(response[http::field::content_type]);
    reply.body = response.body();
  } catch (const std::exception& e) {
    reply.body = e.what();
  }
  return reply;
}

// A loopback port free now (bound and released), for a server that cannot pick its own.
int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    close(fd);
    return 0;
  }
  close(fd);
  return ntohs(addr.sin_port);
}

// The installed program `name` on PATH, or nullopt.
std::optional<std::string> Installed(const std::string& name) {
  const char* path = getenv("PATH");
  std::stringstream dirs(path == nullptr ? "/usr/bin" : path);
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    const fs::path candidate = fs::path(dir) / name;
    if (!dir.empty() && access(candidate.c_str(), X_OK) == 0) return candidate.string();
  }
  return std::nullopt;
}

class MetricsTest : public testing::OnsetdTest {
 protected:
  MetricsTest() : OnsetdTest("onset-metrics") {}
  void TearDown() override {
    if (prometheus_.process) prometheus_.process->Terminate(std::chrono::seconds(10));
    OnsetdTest::TearDown();
  }

  // The value Prometheus at `address` holds now for the instant query `query`, or "" while it
  // has none.
  static std::string Query(const std::string& address, const std::string& query) {
    std::string escaped;
    for (unsigned char c : query) {
      if (isalnum(c) || c == '_') {
        escaped += static_cast<char>(c);
      } else {
        char hex[4];
        snprintf(hex, sizeof(hex), "%%%02X", c);
        escaped += hex;
      }
    }
    const HttpReply reply = Get(address, "/api/v1/query?query=" + escaped, "");
    if (reply.status != 200) return "";
    const nlohmann::json json = nlohmann::json::parse(reply.body, nullptr, false);
    if (json.is_discarded() || !json.contains("data") || json["data"]["result"].empty()) {
      return "";
    }
    return json["data"]["result"][0]["value"][1].get<std::string>();
  }

  // Polls Query until it returns `want` (60 s at most); the last value seen.
  static std::string WaitForValue(const std::string& address, const std::string& query,
                                  const std::string& want) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    std::string seen = Query(address, query);
    while (seen != want && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
      seen = Query(address, query);
    }
    return seen;
  }

  testing::Child prometheus_;
};

TEST_F(MetricsTest, TheTextFormatForTheTokenAndARealPrometheusSeesCellsChange) {
  std::string missing;
  if (!testing::HaveBinaries({"onsetd", "onset"}, &missing))
    GTEST_SKIP() << missing << " not built";
  daemon_ = testing::StartDaemon(
      launcher_, dir_,
      {"--metrics-listen", "127.0.0.1:0", "--metrics-address-file", (dir_ / "maddr").string()});
  ASSERT_FALSE(daemon_.address.empty());
  const std::string metrics = testing::WaitForFile(dir_ / "maddr");
  ASSERT_FALSE(metrics.empty());

  EXPECT_EQ(Get(metrics, "/metrics", "").status, 401);
  EXPECT_EQ(Get(metrics, "/metrics", "not-the-token-not-the-token").status, 401);
  EXPECT_EQ(Get(metrics, "/", daemon_.token).status, 404);

  // Prometheus's credential: a read token, not the admin token file.
  const std::string read_token_file = (dir_ / "prometheus.token").string();
  ASSERT_EQ(
      Onset({"token", "create", "prometheus", "--role", "read", "--out", read_token_file}).code, 0);
  absl::StatusOr<std::string> read_token = common::ReadTokenFile(read_token_file);
  ASSERT_TRUE(read_token.ok()) << read_token.status();

  const std::string study = (dir_ / "watched.yaml").string();
  std::ofstream(study) << kStudy;
  ASSERT_EQ(Onset({"submit", study}).code, 0);
  // The page is read anew at most once a second.
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  const HttpReply page = Get(metrics, "/metrics", *read_token);
  ASSERT_EQ(page.status, 200) << page.body;
  EXPECT_EQ(page.content_type, "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_NE(page.body.find("onset_cells{study=\"watched\",state=\"queued\"} 2\n"),
            std::string::npos)
      << page.body;
  EXPECT_NE(page.body.find("onset_rpc_calls_total{service=\"onset.v1.StudyService\",method="
                           "\"SubmitStudy\",code=\"OK\"} 1\n"),
            std::string::npos)
      << page.body;
  EXPECT_NE(page.body.find("onset_db_size_bytes "), std::string::npos);
  EXPECT_NE(page.body.find("onset_disk_free_bytes "), std::string::npos);

  if (std::optional<std::string> promtool = Installed("promtool")) {
    std::ofstream(dir_ / "page.txt") << page.body;
    testing::Child check = testing::Start(
        launcher_, "/bin/sh",
        {"-c", *promtool + " check metrics < " + (dir_ / "page.txt").string() + " 2>&1"});
    const testing::Ran checked = testing::Finish(check, std::chrono::seconds(60));
    EXPECT_EQ(checked.code, 0) << checked.out << checked.err;
    EXPECT_EQ(checked.out, "") << "promtool's lint found something";
  } else {
    std::cerr << "promtool is not installed (Debian: prometheus): format check skipped\n";
  }

  std::optional<std::string> prometheus = Installed("prometheus");
  if (!prometheus) GTEST_SKIP() << "prometheus is not installed (Debian: prometheus)";
  const int port = FreePort();
  ASSERT_GT(port, 0);
  const std::string web = "127.0.0.1:" + std::to_string(port);
  std::ofstream(dir_ / "prometheus.yml")
      << "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
      << "scrape_configs:\n"
      << "  - job_name: onsetd\n"
      << "    authorization: {type: Bearer, credentials_file: " << read_token_file << "}\n"
      << "    static_configs: [{targets: ['" << metrics << "']}]\n";
  prometheus_ = testing::Start(launcher_, *prometheus,
                               {"--config.file=" + (dir_ / "prometheus.yml").string(),
                                "--storage.tsdb.path=" + (dir_ / "tsdb").string(),
                                "--web.listen-address=" + web, "--log.level=warn"});
  ASSERT_TRUE(prometheus_.process);

  EXPECT_EQ(WaitForValue(web, "up{job=\"onsetd\"}", "1"), "1") << prometheus_.process->StderrTail();
  EXPECT_EQ(WaitForValue(web, "onset_cells{study=\"watched\",state=\"queued\"}", "2"), "2");
  ASSERT_EQ(Onset({"cancel", "watched"}).code, 0);
  EXPECT_EQ(WaitForValue(web, "onset_cells{study=\"watched\",state=\"cancelled\"}", "2"), "2");
  EXPECT_EQ(WaitForValue(web, "onset_cells{study=\"watched\",state=\"queued\"}", "0"), "0");
  EXPECT_EQ(
      WaitForValue(web, "sum(onset_rpc_calls_total{method=\"CancelCells\",code=\"OK\"})", "1"),
      "1");
}

// Calls `method` ("/package.Service/Method") on `address` without a token, with an empty
// request; its status.
grpc::Status CallWithoutToken(const std::string& address, const std::string& method) {
  grpc::GenericStub stub(grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  grpc::Slice empty("");
  grpc::ByteBuffer request(&empty, 1);
  grpc::ByteBuffer response;
  std::promise<grpc::Status> done;
  stub.UnaryCall(&context, method, grpc::StubOptions(), &request, &response,
                 [&done](grpc::Status s) { done.set_value(std::move(s)); });
  return done.get_future().get();
}

// The value of every onset_rpc_calls_total sample of `page`, by its labels.
std::map<std::string, double> RpcCalls(const std::string& page) {
  std::map<std::string, double> calls;
  static const std::regex kSample(R"(onset_rpc_calls_total\{([^}]*)\} (\S+))");
  for (std::sregex_iterator it(page.begin(), page.end(), kSample), end; it != end; ++it) {
    calls[(*it)[1]] = std::stod((*it)[2]);
  }
  return calls;
}

// Row 11 of the issue on operating onsetd: 70 calls without a token to made-up method names took
// 62 of the page's 64 method slots, and real methods called later were counted only as "other".
// Now only the methods onsetd serves are labelled; any other name counts under one fixed label.
TEST_F(MetricsTest, MadeUpMethodNamesTakeNoLabelAndRealMethodsKeepTheirs) {
  std::string missing;
  if (!testing::HaveBinaries({"onsetd", "onset"}, &missing))
    GTEST_SKIP() << missing << " not built";
  daemon_ = testing::StartDaemon(
      launcher_, dir_,
      {"--metrics-listen", "127.0.0.1:0", "--metrics-address-file", (dir_ / "maddr").string()});
  ASSERT_FALSE(daemon_.address.empty());
  const std::string metrics = testing::WaitForFile(dir_ / "maddr");
  ASSERT_FALSE(metrics.empty());

  for (int i = 0; i < 70; ++i) {
    const grpc::Status s =
        CallWithoutToken(daemon_.address, "/made.up.Service" + std::to_string(i) + "/Invented");
    EXPECT_FALSE(s.ok());
  }
  const std::string study = (dir_ / "watched.yaml").string();
  std::ofstream(study) << kStudy;
  ASSERT_EQ(Onset({"submit", study}).code, 0);
  ASSERT_EQ(Onset({"status"}).code, 0);
  ASSERT_EQ(Onset({"status", "watched"}).code, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));  // the page is read anew
  const HttpReply page = Get(metrics, "/metrics", daemon_.token);
  ASSERT_EQ(page.status, 200) << page.body;

  const std::map<std::string, double> calls = RpcCalls(page.body);
  EXPECT_EQ(calls.count(R"(service="onset.v1.StudyService",method="SubmitStudy",code="OK")"), 1u)
      << page.body;
  EXPECT_EQ(calls.count(R"(service="onset.v1.StudyService",method="ListStudies",code="OK")"), 1u)
      << page.body;
  EXPECT_EQ(calls.count(R"(service="onset.v1.StudyService",method="GetStudy",code="OK")"), 1u)
      << page.body;
  double unknown = 0;
  for (const auto& [labels, value] : calls) {
    EXPECT_EQ(labels.find("made.up"), std::string::npos) << labels;
    EXPECT_EQ(labels.find("Invented"), std::string::npos) << labels;
    if (labels.rfind(R"(service="other",method="unknown",)", 0) == 0) unknown += value;
  }
  EXPECT_EQ(unknown, 70) << page.body;
  EXPECT_EQ(page.body.find("made.up"), std::string::npos);

  if (std::optional<std::string> promtool = Installed("promtool")) {
    std::ofstream(dir_ / "page.txt") << page.body;
    testing::Child check = testing::Start(
        launcher_, "/bin/sh",
        {"-c", *promtool + " check metrics < " + (dir_ / "page.txt").string() + " 2>&1"});
    const testing::Ran checked = testing::Finish(check, std::chrono::seconds(60));
    EXPECT_EQ(checked.code, 0) << checked.out << checked.err;
    EXPECT_EQ(checked.out, "") << "promtool's lint found something";
  }
}

}  // namespace
}  // namespace onset
