// The libcurl poster against a real HTTP receiver on 127.0.0.1: what arrives, and how each kind
// of answer (or none) comes back as a status.
#include "coordinator/notify/webhook_poster.h"

#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/ascii.h"

namespace onset::coordinator {
namespace {

using std::chrono::milliseconds;
using ::testing::HasSubstr;
using ::testing::Not;

// A one-connection-at-a-time HTTP/1.1 receiver on 127.0.0.1 (an ephemeral port): reads a
// request (head and Content-Length body) and answers `status` with a short body, or with
// `body_bytes` bytes; with `hang`, accepts and reads but never answers.
class Receiver {
 public:
  struct Request {
    std::string head;  // request line and headers
    std::string body;
  };

  explicit Receiver(int status, bool hang = false, size_t body_bytes = 2)
      : status_(status), hang_(hang), body_bytes_(body_bytes) {
    listener_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    EXPECT_EQ(::bind(listener_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    EXPECT_EQ(::listen(listener_, 8), 0);
    socklen_t len = sizeof(addr);
    EXPECT_EQ(::getsockname(listener_, reinterpret_cast<sockaddr*>(&addr), &len), 0);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { Serve(); });
  }
  ~Receiver() {
    stop_ = true;
    thread_.join();
    for (int fd : held_) ::close(fd);
    ::close(listener_);
  }

  // A URL of this receiver with a secret in its path and query, as a Slack URL has.
  std::string Url() const {
    return "http://127.0.0.1:" + std::to_string(port_) + "/services/T0/B0/SECRET?token=HIDDEN";
  }
  std::vector<Request> requests() {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_;
  }

 private:
  // Waits up to 50 ms for `fd` to be readable; false when it is not (or we stop).
  bool Readable(int fd) {
    pollfd p{fd, POLLIN, 0};
    return ::poll(&p, 1, 50) > 0;
  }

  void Serve() {
    while (!stop_) {
      if (!Readable(listener_)) continue;
      const int fd = ::accept(listener_, nullptr, nullptr);
      if (fd < 0) continue;
      Request request;
      std::string data;
      size_t body_at = std::string::npos, length = 0;
      while (!stop_) {
        if (!Readable(fd)) continue;
        char buf[4096];
        const ssize_t n = ::read(fd, buf, sizeof(buf));
        if (n <= 0) break;
        data.append(buf, static_cast<size_t>(n));
        if (body_at == std::string::npos && data.find("\r\n\r\n") != std::string::npos) {
          body_at = data.find("\r\n\r\n") + 4;
          request.head = data.substr(0, body_at);
          const std::string lower = absl::AsciiStrToLower(request.head);
          const size_t cl = lower.find("content-length:");
          if (cl != std::string::npos) length = std::stoul(lower.substr(cl + 15));
        }
        if (body_at != std::string::npos && data.size() >= body_at + length) break;
      }
      if (body_at != std::string::npos) request.body = data.substr(body_at, length);
      {
        std::lock_guard<std::mutex> lock(mu_);
        requests_.push_back(request);
      }
      if (hang_) {
        held_.push_back(fd);  // never answered; closed when the receiver goes
        continue;
      }
      const std::string body(body_bytes_, 'k');
      const std::string answer = "HTTP/1.1 " + std::to_string(status_) +
                                 " Whatever\r\nContent-Type: text/plain\r\nLocation: /elsewhere"
                                 "\r\nConnection: close\r\nContent-Length: " +
                                 std::to_string(body.size()) + "\r\n\r\n" + body;
      size_t sent = 0;
      while (sent < answer.size()) {
        const ssize_t n = ::send(fd, answer.data() + sent, answer.size() - sent, MSG_NOSIGNAL);
        if (n <= 0) break;
        sent += static_cast<size_t>(n);
      }
      ::close(fd);
    }
  }

  const int status_;
  const bool hang_;
  const size_t body_bytes_;
  int listener_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::vector<int> held_;  // Serve's thread only, then the destructor
  std::mutex mu_;
  std::vector<Request> requests_;
  std::thread thread_;
};

constexpr milliseconds kTimeout{5'000};

TEST(WebhookPosterTest, PostsTheJsonBodyIntact) {
  Receiver receiver(200);
  // Over 1 KiB, with non-ASCII text: arrives byte for byte, without a 100-continue pause.
  const std::string body =
      R"({"kind":"study_ended","text":"onset: study \"démo\" ended ✓","pad":")" +
      std::string(3000, 'p') + "\"}";
  const absl::Status status = NewCurlPoster()->Post(receiver.Url(), body, kTimeout);
  ASSERT_TRUE(status.ok()) << status;
  const std::vector<Receiver::Request> requests = receiver.requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].body, body);
  const std::string head = absl::AsciiStrToLower(requests[0].head);
  EXPECT_THAT(head, HasSubstr("post /services/t0/b0/secret?token=hidden http/1.1\r\n"));
  EXPECT_THAT(head, HasSubstr("\r\ncontent-type: application/json\r\n"));
  EXPECT_THAT(head, HasSubstr("\r\nuser-agent: onsetd\r\n"));
  EXPECT_THAT(head, Not(HasSubstr("100-continue")));
}

TEST(WebhookPosterTest, ServerErrorsAndThrottlingMayPassLater) {
  for (int code : {500, 503, 429}) {
    Receiver receiver(code);
    const absl::Status status = NewCurlPoster()->Post(receiver.Url(), "{}", kTimeout);
    EXPECT_TRUE(absl::IsUnavailable(status)) << status;
    EXPECT_THAT(status.message(), HasSubstr("HTTP " + std::to_string(code)));
    EXPECT_THAT(status.message(), Not(HasSubstr("SECRET")));
    EXPECT_THAT(status.message(), Not(HasSubstr("HIDDEN")));
  }
}

TEST(WebhookPosterTest, ClientErrorsAndRedirectsWillNotPass) {
  for (int code : {404, 400, 302}) {
    Receiver receiver(code);
    const absl::Status status = NewCurlPoster()->Post(receiver.Url(), "{}", kTimeout);
    EXPECT_TRUE(absl::IsFailedPrecondition(status)) << status;
    EXPECT_THAT(status.message(), HasSubstr("HTTP " + std::to_string(code)));
    EXPECT_THAT(status.message(), Not(HasSubstr("SECRET")));
    EXPECT_EQ(receiver.requests().size(), 1u);  // the redirect was not followed
  }
}

TEST(WebhookPosterTest, ALargeAnswerIsCutOffNotRead) {
  Receiver receiver(200, /*hang=*/false, /*body_bytes=*/1 << 20);
  const absl::Status status = NewCurlPoster()->Post(receiver.Url(), "{}", kTimeout);
  EXPECT_TRUE(status.ok()) << status;
}

TEST(WebhookPosterTest, AReceiverThatNeverAnswersTimesOut) {
  Receiver receiver(200, /*hang=*/true);
  const auto start = std::chrono::steady_clock::now();
  const absl::Status status = NewCurlPoster()->Post(receiver.Url(), "{}", milliseconds(300));
  EXPECT_TRUE(absl::IsUnavailable(status)) << status;
  EXPECT_THAT(status.message(), Not(HasSubstr("SECRET")));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

TEST(WebhookPosterTest, ARefusedConnectionMayPassLater) {
  // A port that was free a moment ago: nothing listens on it.
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  socklen_t len = sizeof(addr);
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  ::close(fd);
  const std::string url =
      "http://127.0.0.1:" + std::to_string(ntohs(addr.sin_port)) + "/hook/SECRET";
  const absl::Status status = NewCurlPoster()->Post(url, "{}", kTimeout);
  EXPECT_TRUE(absl::IsUnavailable(status)) << status;
  EXPECT_THAT(status.message(), HasSubstr("POST http://127.0.0.1:"));
  EXPECT_THAT(status.message(), Not(HasSubstr("SECRET")));
}

TEST(WebhookPosterTest, OnlyHttpUrlsArePosted) {
  const absl::Status status = NewCurlPoster()->Post("ftp://example.com/x/SECRET", "{}", kTimeout);
  EXPECT_TRUE(absl::IsInvalidArgument(status)) << status;
  EXPECT_THAT(status.message(), Not(HasSubstr("SECRET")));
}

TEST(WebhookPosterTest, RedactedUrlKeepsOnlySchemeAndHost) {
  EXPECT_EQ(RedactedUrl("https://hooks.slack.com/services/T0/B0/XYZ"), "https://hooks.slack.com/…");
  EXPECT_EQ(RedactedUrl("http://127.0.0.1:8080/hook?token=abc"), "http://127.0.0.1:8080/…");
  EXPECT_EQ(RedactedUrl("https://host?token=abc"), "https://host/…");
  EXPECT_EQ(RedactedUrl("https://user:password@host:443/x"), "https://host:443/…");
  EXPECT_EQ(RedactedUrl("https://host"), "https://host");
  EXPECT_EQ(RedactedUrl("https://host/"), "https://host/");
  EXPECT_EQ(RedactedUrl("hooks.slack.com/services/T0/B0/XYZ"), "(not a URL)");
}

TEST(WebhookPosterTest, CheckWebhookUrlWantsHttpAndAHost) {
  EXPECT_TRUE(CheckWebhookUrl("https://hooks.slack.com/services/T0/B0/XYZ").ok());
  EXPECT_TRUE(CheckWebhookUrl("HTTP://127.0.0.1:8080/").ok());
  for (const char* bad : {"ftp://host/x", "https:///path", "hooks.slack.com/x", "http://h/a b",
                          "https://user@/x", ""}) {
    const absl::Status status = CheckWebhookUrl(bad);
    EXPECT_TRUE(absl::IsInvalidArgument(status)) << bad;
  }
}

}  // namespace
}  // namespace onset::coordinator
