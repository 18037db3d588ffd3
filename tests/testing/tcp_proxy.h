// A TCP proxy on loopback that a test can cut: what a network partition between two processes
// looks like to them. Every byte is passed on unchanged both ways until Cut(), which closes every
// open connection and then accepts and at once closes new ones (connection refused, as far as a
// client can tell) until Heal(). DelayReplies(ms) holds what the upstream side sends for that
// long before passing it on (slow replies: the requests have arrived). Plain POSIX sockets and
// threads, no GoogleTest (like temp_dir.h). Only loopback addresses are ever used.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <list>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>

namespace onset::testutil {

// 127.0.0.1:`port` (0: any free port, for bind).
inline sockaddr_in LoopbackAddress(int port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  return addr;
}

class TcpProxy {
 public:
  // Listens on a free loopback port and forwards every connection to 127.0.0.1:`upstream_port`.
  explicit TcpProxy(int upstream_port) : upstream_port_(upstream_port) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (listen_fd_ < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
    sockaddr_in addr = Loopback(0);
    socklen_t len = sizeof addr;
    if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        ::listen(listen_fd_, 64) != 0 ||
        ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      const std::string error = std::strerror(errno);
      ::close(listen_fd_);
      throw std::runtime_error("cannot listen on loopback: " + error);
    }
    port_ = ntohs(addr.sin_port);
    acceptor_ = std::thread([this] { Accept(); });
  }
  ~TcpProxy() {
    stopping_ = true;
    acceptor_.join();
    ::close(listen_fd_);
    std::lock_guard<std::mutex> lock(mu_);
    for (std::thread& pump : pumps_) pump.join();
  }
  TcpProxy(const TcpProxy&) = delete;
  TcpProxy& operator=(const TcpProxy&) = delete;

  int port() const { return port_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

  // Closes every connection (within 50 ms) and refuses new ones until Heal().
  void Cut() {
    cut_ = true;
    ++generation_;
  }
  void Heal() { cut_ = false; }
  // Every chunk the upstream side sends waits `ms` before it is passed on (0: none).
  void DelayReplies(int ms) { reply_delay_ms_ = ms; }

 private:
  static sockaddr_in Loopback(int port) { return LoopbackAddress(port); }

  void Accept() {
    while (!stopping_) {
      pollfd p{listen_fd_, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      const int client = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (client < 0) continue;
      if (cut_) {
        ::close(client);
        continue;
      }
      const int upstream = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      sockaddr_in addr = Loopback(upstream_port_);
      if (upstream < 0 ||
          ::connect(upstream, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
        if (upstream >= 0) ::close(upstream);
        ::close(client);
        continue;
      }
      std::lock_guard<std::mutex> lock(mu_);
      pumps_.emplace_back([this, client, upstream] { Pump(client, upstream); });
    }
  }

  // Passes bytes both ways until either side closes, the proxy is cut or it stops.
  void Pump(int a, int b) {
    const int generation = generation_;
    char buffer[64 * 1024];
    bool open = true;
    while (open && !stopping_ && generation_ == generation) {
      pollfd p[2] = {{a, POLLIN, 0}, {b, POLLIN, 0}};
      if (::poll(p, 2, 50) <= 0) continue;
      for (int i = 0; i < 2 && open; ++i) {
        if ((p[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
        const int from = i == 0 ? a : b;
        const int to = i == 0 ? b : a;
        const ssize_t n = ::read(from, buffer, sizeof buffer);
        if (n <= 0) {
          open = false;
          break;
        }
        // A reply held back: the connection is still cut through if the proxy is meanwhile.
        for (int waited = 0;
             i == 1 && waited < reply_delay_ms_ && !stopping_ && generation_ == generation;
             waited += 10) {
          std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
        for (ssize_t done = 0; done < n;) {
          const ssize_t w = ::send(to, buffer + done, static_cast<size_t>(n - done), MSG_NOSIGNAL);
          if (w <= 0) {
            open = false;
            break;
          }
          done += w;
        }
      }
    }
    ::shutdown(a, SHUT_RDWR);
    ::shutdown(b, SHUT_RDWR);
    ::close(a);
    ::close(b);
  }

  const int upstream_port_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> cut_{false};
  std::atomic<int> generation_{0};
  std::atomic<int> reply_delay_ms_{0};
  std::thread acceptor_;
  std::mutex mu_;
  std::list<std::thread> pumps_;  // guarded by mu_
};

}  // namespace onset::testutil
