// The dashboard's HTTP server under hostile clients: idle, slow, malformed, oversized and too
// many connections, over real loopback sockets. No test waits for a timeout longer than the
// short ones its options set, and none measures speed.
#include "coordinator/dashboard/dashboard_server.h"

#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/fake_clock.h"
#include "coordinator/dashboard/dashboard_api.h"
#include "coordinator/store/sqlite_store.h"
#include "tests/coordinator/test_util.h"

namespace onset::coordinator {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using testutil::TempDir;

constexpr char kToken[] = "dashboard-token-0123456789abcdef0123456789";

// A blocking client on a raw socket, so that the test can send anything at all. Every read gives
// up after 30 s (a server that never answers fails the test instead of hanging it).
class RawClient {
 public:
  explicit RawClient(int port) : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
    timeval tv{30, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  }
  ~RawClient() { ::close(fd_); }
  RawClient(const RawClient&) = delete;
  RawClient& operator=(const RawClient&) = delete;

  bool connected() const { return connected_; }
  int fd() const { return fd_; }

  bool Send(const std::string& data) {
    size_t sent = 0;
    while (sent < data.size()) {
      const ssize_t n = ::send(fd_, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) return false;
      sent += static_cast<size_t>(n);
    }
    return true;
  }

  struct Read {
    std::string data;
    bool closed = false;  // the server closed (end of stream or reset), not our timeout
  };
  // Everything until the server closes the connection.
  Read ReadToClose() {
    Read r;
    char buf[4096];
    while (true) {
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n > 0) {
        r.data.append(buf, static_cast<size_t>(n));
        continue;
      }
      r.closed = n == 0 || errno == ECONNRESET;
      return r;
    }
  }

  // One response: its header and a Content-Length body, leaving the connection open.
  std::string ReadResponse() {
    std::string data;
    char c;
    while (data.find("\r\n\r\n") == std::string::npos && ::recv(fd_, &c, 1, 0) == 1) data += c;
    const size_t at = data.find("Content-Length: ");
    if (at == std::string::npos) return data;
    size_t length = std::stoul(data.substr(at + 16));
    std::string body(length, '\0');
    size_t got = 0;
    while (got < length) {
      const ssize_t n = ::recv(fd_, body.data() + got, length - got, 0);
      if (n <= 0) break;
      got += static_cast<size_t>(n);
    }
    return data + body.substr(0, got);
  }

 private:
  int fd_;
  bool connected_ = false;
};

int ThreadsOfThisProcess() {
  int n = 0;
  for ([[maybe_unused]] const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    ++n;
  }
  return n;
}

// How many of `clients` the server has closed, waiting (up to 30 s) until at least `want` are.
int WaitForClosed(std::vector<std::unique_ptr<RawClient>>& clients, int want) {
  std::vector<bool> closed(clients.size(), false);
  int count = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (count < want && std::chrono::steady_clock::now() < deadline) {
    std::vector<pollfd> fds;
    std::vector<size_t> index;
    for (size_t i = 0; i < clients.size(); ++i) {
      if (closed[i]) continue;
      fds.push_back({clients[i]->fd(), POLLIN, 0});
      index.push_back(i);
    }
    if (::poll(fds.data(), fds.size(), 100) <= 0) continue;
    for (size_t j = 0; j < fds.size(); ++j) {
      if (fds[j].revents == 0) continue;
      char buf[4096];
      const ssize_t n = ::recv(fds[j].fd, buf, sizeof buf, MSG_DONTWAIT);
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) {
        closed[index[j]] = true;
        ++count;
      }
    }
  }
  return count;
}

int PortOf(const DashboardServer& server) {
  const std::string& address = server.address();
  return std::stoi(address.substr(address.rfind(':') + 1));
}

constexpr char kGetPage[] = "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
constexpr char kGetPageAndClose[] =
    "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";

class DashboardServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string worker;
    store_ = testing::OpenSmallStudyStore(dir_.File("onset.db"), clock_, &worker);
    ASSERT_NE(store_, nullptr);
    api_ = std::make_unique<DashboardApi>(store_.get(), store_.get(), kToken);
  }

  std::unique_ptr<DashboardServer> Serve(const DashboardServerOptions& options) {
    absl::StatusOr<std::unique_ptr<DashboardServer>> server =
        DashboardServer::Start("127.0.0.1:0", api_.get(), options);
    EXPECT_TRUE(server.ok()) << server.status();
    return server.ok() ? std::move(*server) : nullptr;
  }

  TempDir dir_;
  common::FakeClock clock_;
  std::unique_ptr<SqliteStore> store_;
  std::unique_ptr<DashboardApi> api_;
};

// A flood of connections that never finish a request holds no thread each, keeps at most
// max_connections open, and a real request still gets its answer.
TEST_F(DashboardServerTest, IdleConnectionsHoldNoThreadsAndDoNotKeepARequestOut) {
  DashboardServerOptions options;
  options.max_connections = 8;
  options.threads = 2;
  std::unique_ptr<DashboardServer> server = Serve(options);
  ASSERT_NE(server, nullptr);
  const int port = PortOf(*server);
  const int threads = ThreadsOfThisProcess();

  constexpr int kIdle = 100;
  std::vector<std::unique_ptr<RawClient>> idle;
  for (int i = 0; i < kIdle; ++i) {
    idle.push_back(std::make_unique<RawClient>(port));
    ASSERT_TRUE(idle.back()->connected()) << i;
    // Half send nothing, half the start of a request and no more.
    if (i % 2 == 1) {
      ASSERT_TRUE(idle.back()->Send("GET / HTTP/1.1\r\nHost: 127.0."));
    }
  }
  RawClient client(port);
  ASSERT_TRUE(client.Send(kGetPageAndClose));
  const RawClient::Read page = client.ReadToClose();
  EXPECT_TRUE(page.closed);
  EXPECT_THAT(page.data, StartsWith("HTTP/1.1 200"));
  EXPECT_THAT(page.data, HasSubstr("<title>onset</title>"));

  EXPECT_LE(ThreadsOfThisProcess(), threads);
  // All but max_connections of them have been closed to make room.
  EXPECT_GE(WaitForClosed(idle, kIdle - options.max_connections), kIdle - options.max_connections);
}

TEST_F(DashboardServerTest, AnIdleConnectionIsClosedAfterTheTimeouts) {
  DashboardServerOptions options;
  options.header_timeout = std::chrono::milliseconds(100);
  options.idle_timeout = std::chrono::milliseconds(100);
  std::unique_ptr<DashboardServer> server = Serve(options);
  ASSERT_NE(server, nullptr);
  const int port = PortOf(*server);

  RawClient silent(port);
  const RawClient::Read nothing = silent.ReadToClose();
  EXPECT_TRUE(nothing.closed);
  EXPECT_EQ(nothing.data, "");

  RawClient slow(port);  // the header never ends
  ASSERT_TRUE(slow.Send("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n"));
  EXPECT_TRUE(slow.ReadToClose().closed);

  RawClient kept(port);  // keep-alive, then nothing more
  ASSERT_TRUE(kept.Send(kGetPage));
  EXPECT_THAT(kept.ReadResponse(), StartsWith("HTTP/1.1 200"));
  ASSERT_TRUE(kept.Send(kGetPage));  // a second request is still served on it
  EXPECT_THAT(kept.ReadResponse(), StartsWith("HTTP/1.1 200"));
  const RawClient::Read after = kept.ReadToClose();
  EXPECT_TRUE(after.closed);
  EXPECT_EQ(after.data, "");
}

TEST_F(DashboardServerTest, AMalformedRequestGets400AndIsClosed) {
  std::unique_ptr<DashboardServer> server = Serve({});
  ASSERT_NE(server, nullptr);
  for (const std::string& request : {
           std::string("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nno colon here\r\n\r\n"),
           std::string("GET / HTTP/7.5\r\nHost: 127.0.0.1\r\n\r\n"),
           std::string("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n", 15),
       }) {
    RawClient client(PortOf(*server));
    ASSERT_TRUE(client.Send(request));
    const RawClient::Read r = client.ReadToClose();
    EXPECT_TRUE(r.closed);
    EXPECT_THAT(r.data, StartsWith("HTTP/1.1 400 Bad Request\r\n")) << request;
    EXPECT_THAT(r.data, HasSubstr("malformed request"));
  }
}

TEST_F(DashboardServerTest, AnOversizedHeaderGets431AndIsClosed) {
  DashboardServerOptions options;
  options.header_limit = 4096;
  std::unique_ptr<DashboardServer> server = Serve(options);
  ASSERT_NE(server, nullptr);
  for (const std::string& request : {
           "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + std::string(20000, 'a') + "\r\n\r\n",
           "GET /" + std::string(8000, 'a') + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
       }) {
    RawClient client(PortOf(*server));
    ASSERT_TRUE(client.Send(request));
    const RawClient::Read r = client.ReadToClose();
    EXPECT_TRUE(r.closed);
    EXPECT_THAT(r.data, StartsWith("HTTP/1.1 431 Request Header Fields Too Large\r\n"));
  }
}

// Only GET is served: a body is never read, so the connection closes after the answer.
TEST_F(DashboardServerTest, ABodyGets413OrIfNotAGet405) {
  std::unique_ptr<DashboardServer> server = Serve({});
  ASSERT_NE(server, nullptr);
  const int port = PortOf(*server);
  {
    RawClient client(port);
    ASSERT_TRUE(client.Send(
        "POST /api/studies HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 5\r\n\r\nhello"));
    const RawClient::Read r = client.ReadToClose();
    EXPECT_TRUE(r.closed);
    EXPECT_THAT(r.data, StartsWith("HTTP/1.1 405 Method Not Allowed\r\n"));
    EXPECT_THAT(r.data, HasSubstr("Allow: GET\r\n"));
  }
  for (const std::string& framing :
       {std::string("Content-Length: 5\r\n\r\nhello"),
        std::string("Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n")}) {
    RawClient client(port);
    ASSERT_TRUE(client.Send("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n" + framing));
    const RawClient::Read r = client.ReadToClose();
    EXPECT_TRUE(r.closed);
    EXPECT_THAT(r.data, StartsWith("HTTP/1.1 413 Payload Too Large\r\n")) << framing;
  }
  {  // Without a body the connection stays usable.
    RawClient client(port);
    ASSERT_TRUE(client.Send("DELETE /api/studies HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"));
    const std::string r = client.ReadResponse();
    EXPECT_THAT(r, StartsWith("HTTP/1.1 405 Method Not Allowed\r\n"));
    EXPECT_THAT(r, HasSubstr("Allow: GET\r\n"));
    ASSERT_TRUE(client.Send(kGetPage));
    EXPECT_THAT(client.ReadResponse(), StartsWith("HTTP/1.1 200"));
  }
}

// The socket closes once the response is written: the client reads to the end with no other
// connection arriving meanwhile.
TEST_F(DashboardServerTest, AResponseWithoutKeepAliveClosesTheConnection) {
  std::unique_ptr<DashboardServer> server = Serve({});
  ASSERT_NE(server, nullptr);
  for (const std::string& request :
       {std::string(kGetPageAndClose), std::string("GET / HTTP/1.0\r\n\r\n")}) {
    RawClient client(PortOf(*server));
    ASSERT_TRUE(client.Send(request));
    const RawClient::Read r = client.ReadToClose();
    EXPECT_TRUE(r.closed) << request;
    EXPECT_THAT(r.data, HasSubstr(" 200 OK\r\n"));
    EXPECT_THAT(r.data, HasSubstr("</html>"));
  }
}

// With every connection busy with a request, one more is answered 503 at once and closed; no
// thread is started for it.
TEST_F(DashboardServerTest, ConnectionsOverTheLimitGet503WhenAllAreBusy) {
  std::mutex mu;
  std::condition_variable cv;
  int inside = 0;
  bool release = false;
  HttpHandler handler = [&](const HttpRequest& request) {
    if (request.target == "/slow") {
      std::unique_lock<std::mutex> lock(mu);
      ++inside;
      cv.notify_all();
      cv.wait(lock, [&] { return release; });
    }
    return HttpResponse{200, "text/plain", "done"};
  };
  DashboardServerOptions options;
  options.max_connections = 2;
  options.threads = 4;
  absl::StatusOr<std::unique_ptr<DashboardServer>> server =
      DashboardServer::Start("127.0.0.1:0", handler, options);
  ASSERT_TRUE(server.ok()) << server.status();
  const int port = PortOf(**server);

  RawClient a(port), b(port);
  const std::string slow = "GET /slow HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
  ASSERT_TRUE(a.Send(slow));
  ASSERT_TRUE(b.Send(slow));
  {
    std::unique_lock<std::mutex> lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(30), [&] { return inside == 2; }));
  }
  const int threads = ThreadsOfThisProcess();
  for (int i = 0; i < 3; ++i) {
    RawClient over(port);
    const RawClient::Read r = over.ReadToClose();
    EXPECT_TRUE(r.closed);
    EXPECT_THAT(r.data, StartsWith("HTTP/1.1 503 Service Unavailable\r\n"));
    EXPECT_THAT(r.data, HasSubstr("Retry-After: "));
  }
  EXPECT_LE(ThreadsOfThisProcess(), threads);
  {
    std::lock_guard<std::mutex> lock(mu);
    release = true;
  }
  cv.notify_all();
  for (RawClient* c : {&a, &b}) {
    const RawClient::Read r = c->ReadToClose();
    EXPECT_TRUE(r.closed);
    EXPECT_THAT(r.data, StartsWith("HTTP/1.1 200"));
  }
  // Room again.
  RawClient next(port);
  ASSERT_TRUE(next.Send(kGetPageAndClose));
  EXPECT_THAT(next.ReadToClose().data, StartsWith("HTTP/1.1 200"));
}

// A handler that throws answers 500; the server goes on serving.
TEST(DashboardServerHandlerTest, AnExceptionIsA500AndServingGoesOn) {
  HttpHandler handler = [](const HttpRequest& request) -> HttpResponse {
    if (request.target == "/boom") throw std::runtime_error("no such luck \xff");
    return HttpResponse{200, "text/plain", "fine"};
  };
  absl::StatusOr<std::unique_ptr<DashboardServer>> server =
      DashboardServer::Start("127.0.0.1:0", handler);
  ASSERT_TRUE(server.ok()) << server.status();
  RawClient client(PortOf(**server));
  ASSERT_TRUE(client.Send("GET /boom HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"));
  const std::string boom = client.ReadResponse();
  EXPECT_THAT(boom, StartsWith("HTTP/1.1 500"));
  EXPECT_THAT(boom, HasSubstr("no such luck"));
  ASSERT_TRUE(client.Send(kGetPageAndClose));
  EXPECT_THAT(client.ReadToClose().data, StartsWith("HTTP/1.1 200"));
}

}  // namespace
}  // namespace onset::coordinator
