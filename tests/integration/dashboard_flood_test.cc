// The real onsetd with its dashboard port flooded by idle connections: gRPC must keep answering
// and the dashboard must keep serving. onsetd runs under a low open-file limit, so that the flood
// is larger than what it may open, as a flood of thousands would be against the default limit.
// Skips when onsetd is missing from ONSET_BIN_DIR.
#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "cli/client/study_client.h"
#include "common/auth_token.h"
#include "tests/integration/harness.h"

namespace onset {
namespace {

namespace fs = std::filesystem;
using testing::Child;
using testing::HaveBinaries;
using testing::Start;
using testing::WaitForFile;

constexpr int kOpenFileLimit = 192;  // onsetd's
constexpr int kFlood = 400;

// A connection to 127.0.0.1:`port` that sends nothing; -1 when it cannot be made.
int Connect(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  timeval tv{30, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  return fd;
}

// GET / with Connection: close; the status line, or "" when nothing came back.
std::string StatusLineOfThePage(int port) {
  const int fd = Connect(port);
  if (fd < 0) return "";
  const std::string request = "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
  std::string response;
  if (::send(fd, request.data(), request.size(), MSG_NOSIGNAL) ==
      static_cast<ssize_t>(request.size())) {
    char buf[4096];
    ssize_t n;
    while ((n = ::recv(fd, buf, sizeof buf, 0)) > 0) response.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return response.substr(0, response.find("\r\n"));
}

TEST(DashboardFloodTest, GrpcAndThePageAnswerWhileTheDashboardPortIsFlooded) {
  std::string missing;
  if (!HaveBinaries({"onsetd"}, &missing)) GTEST_SKIP() << missing << " not built";
  const fs::path dir = fs::temp_directory_path() / ("onset-flood-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  worker::PosixProcessLauncher launcher;
  Child daemon =
      Start(launcher, "/bin/sh",
            {"-c", "ulimit -n " + std::to_string(kOpenFileLimit) + " && exec \"$0\" \"$@\"",
             (fs::path(testing::BinDir()) / "onsetd").string(), "--db", (dir / "onset.db").string(),
             "--listen", "127.0.0.1:0", "--address-file", (dir / "addr").string(), "--http",
             "127.0.0.1:0", "--http-address-file", (dir / "http").string()});
  ASSERT_NE(daemon.process, nullptr);
  const std::string address = WaitForFile(dir / "addr");
  const std::string http = WaitForFile(dir / "http");
  ASSERT_FALSE(address.empty() || http.empty()) << daemon.process->StderrTail();
  absl::StatusOr<std::string> token =
      common::ReadTokenFile((dir / common::kTokenFileName).string());
  ASSERT_TRUE(token.ok()) << token.status();
  const int port = std::stoi(http.substr(http.rfind(':') + 1));

  std::vector<int> flood;
  for (int i = 0; i < kFlood; ++i) {
    const int fd = Connect(port);
    ASSERT_GE(fd, 0) << "connection " << i << ": " << std::strerror(errno);
    flood.push_back(fd);
  }
  {  // A fresh gRPC connection (a new client's channel) is accepted and answered. The channel
     // closes at the end of the block: an open one holds onsetd's shutdown for its 5 s grace.
    cli::StudyClient client(address, common::ClientSecurity{*token, ""}, std::chrono::seconds(20));
    absl::StatusOr<v1::ListWorkersResponse> workers = client.Workers();
    EXPECT_TRUE(workers.ok()) << workers.status() << "\n" << daemon.process->StderrTail();
  }
  // The page too: the idle connections make room.
  EXPECT_EQ(StatusLineOfThePage(port), "HTTP/1.1 200 OK") << daemon.process->StderrTail();
  EXPECT_FALSE(daemon.process->WaitFor(std::chrono::milliseconds(0))) << "onsetd has exited";

  for (int fd : flood) ::close(fd);
  ASSERT_EQ(::kill(daemon.process->pid(), SIGTERM), 0);
  ASSERT_TRUE(daemon.process->WaitFor(std::chrono::seconds(30)));
  EXPECT_EQ(daemon.process->Wait().exit_code, 0) << daemon.process->StderrTail();
  fs::remove_all(dir);
}

}  // namespace
}  // namespace onset
