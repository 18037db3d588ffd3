#include "coordinator/dashboard_server.h"

#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <atomic>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <list>
#include <mutex>
#include <thread>

namespace onset::coordinator {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

class BeastDashboardServer final : public DashboardServer {
 public:
  BeastDashboardServer(const DashboardApi* api) : api_(api), acceptor_(io_) {}
  ~BeastDashboardServer() override { Stop(); }

  absl::Status Bind(const std::string& listen) {
    const size_t colon = listen.rfind(':');
    if (colon == std::string::npos) {
      return absl::InvalidArgumentError("--http " + listen + ": expected HOST:PORT");
    }
    beast::error_code ec;
    const auto address = asio::ip::make_address(listen.substr(0, colon), ec);
    if (ec) return absl::InvalidArgumentError("--http " + listen + ": " + ec.message());
    const int port = std::atoi(listen.substr(colon + 1).c_str());
    const tcp::endpoint endpoint(address, static_cast<unsigned short>(port));
    acceptor_.open(endpoint.protocol(), ec);
    if (!ec) acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
    if (!ec) acceptor_.bind(endpoint, ec);
    if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
    if (ec) return absl::UnavailableError("--http " + listen + ": cannot listen: " + ec.message());
    const tcp::endpoint bound = acceptor_.local_endpoint();
    address_ = bound.address().to_string() + ":" + std::to_string(bound.port());
    accept_thread_ = std::thread([this] { AcceptLoop(); });
    return absl::OkStatus();
  }

  const std::string& address() const override { return address_; }

  void Stop() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopped_) return;
      stopped_ = true;
      beast::error_code ec;
      // shutdown() wakes a thread blocked in accept(); close() alone does not on Linux.
      ::shutdown(acceptor_.native_handle(), SHUT_RDWR);
      acceptor_.close(ec);
      for (Connection& c : connections_) {
        c.socket.shutdown(tcp::socket::shutdown_both, ec);
        c.socket.close(ec);
      }
    }
    if (accept_thread_.joinable()) accept_thread_.join();
    std::list<Connection> all;
    {
      std::lock_guard<std::mutex> lock(mu_);
      all.swap(connections_);
    }
    for (Connection& c : all) {
      if (c.thread.joinable()) c.thread.join();
    }
  }

 private:
  struct Connection {
    explicit Connection(tcp::socket s) : socket(std::move(s)) {}
    tcp::socket socket;
    std::thread thread;
    std::atomic<bool> done{false};
  };

  void AcceptLoop() {
    while (true) {
      beast::error_code ec;
      tcp::socket socket(io_);
      acceptor_.accept(socket, ec);
      std::lock_guard<std::mutex> lock(mu_);
      if (stopped_) return;
      if (ec) {
        spdlog::warn("dashboard: accept failed: {}", ec.message());
        continue;
      }
      // Reap the connections that have ended.
      for (auto it = connections_.begin(); it != connections_.end();) {
        if (!it->done) {
          ++it;
          continue;
        }
        it->thread.join();
        it = connections_.erase(it);
      }
      Connection& c = connections_.emplace_back(std::move(socket));
      c.thread = std::thread([this, &c] {
        Serve(c.socket);
        c.done = true;
      });
    }
  }

  void Serve(tcp::socket& socket) {
    beast::flat_buffer buffer;
    while (true) {
      http::request_parser<http::empty_body> parser;
      parser.header_limit(16 * 1024);
      beast::error_code ec;
      http::read(socket, buffer, parser, ec);
      if (ec) return;  // closed, or a malformed or oversized request
      const auto& req = parser.get();
      HttpRequest request;
      request.method = std::string(req.method_string());
      request.target = std::string(req.target());
      if (auto it = req.find(http::field::authorization); it != req.end()) {
        request.authorization = std::string(it->value());
      }
      const HttpResponse response = api_->Handle(request);
      http::response<http::string_body> res{static_cast<http::status>(response.status),
                                            req.version()};
      res.set(http::field::server, "onsetd");
      res.set(http::field::content_type, response.content_type);
      res.set(http::field::cache_control, "no-store");
      // The page loads nothing from elsewhere; say so to the browser too.
      res.set("Content-Security-Policy",
              "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
              "img-src 'self' data:");
      res.keep_alive(req.keep_alive());
      res.body() = response.body;
      res.prepare_payload();
      http::write(socket, res, ec);
      if (ec || !res.keep_alive()) return;
    }
  }

  const DashboardApi* const api_;
  asio::io_context io_;
  tcp::acceptor acceptor_;
  std::string address_;
  std::thread accept_thread_;
  std::mutex mu_;
  bool stopped_ = false;               // guarded by mu_
  std::list<Connection> connections_;  // guarded by mu_; stable addresses for their threads
};

}  // namespace

absl::StatusOr<std::unique_ptr<DashboardServer>> DashboardServer::Start(const std::string& listen,
                                                                        const DashboardApi* api) {
  auto server = std::make_unique<BeastDashboardServer>(api);
  if (absl::Status s = server->Bind(listen); !s.ok()) return s;
  return std::unique_ptr<DashboardServer>(std::move(server));
}

}  // namespace onset::coordinator
