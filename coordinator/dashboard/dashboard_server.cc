#include "coordinator/dashboard/dashboard_server.h"

#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <exception>
#include <list>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/mutex.h"
#include "coordinator/dashboard/accept_backoff.h"

namespace onset::coordinator {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

// After an error answer the request may still be arriving; reading (and dropping) a little of it
// before closing lets the client see the answer instead of a reset.
constexpr std::chrono::seconds kLingerTime{2};
constexpr size_t kLingerBytes = 64 * 1024;

// What a client gets when every connection is busy with a request: written without blocking,
// then the socket is closed.
const std::string& ServiceUnavailable() {
  static const std::string* const kResponse = [] {
    const std::string body = R"({"error":"the dashboard is busy; retry in a moment"})";
    return new std::string(
        "HTTP/1.1 503 Service Unavailable\r\nServer: onsetd\r\n"
        "Content-Type: application/json\r\nRetry-After: 1\r\n"
        "Connection: close\r\nContent-Length: " +
        std::to_string(body.size()) + "\r\n\r\n" + body);
  }();
  return *kResponse;
}

// Parse errors that mean the client sent something that is not HTTP/1.x (as opposed to closing
// early or a limit).
bool IsMalformed(const beast::error_code& ec) {
  return ec.category() == http::make_error_code(http::error::bad_method).category() &&
         ec != http::error::end_of_stream && ec != http::error::partial_message &&
         ec != http::error::need_more;
}

// At most a quarter of the descriptors the process may open, so that a full dashboard leaves
// gRPC and SQLite theirs.
int ConnectionCap(int wanted) {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return wanted;
  const int cap = static_cast<int>(std::max<rlim_t>(1, limit.rlim_cur / 4));
  if (cap < wanted) {
    spdlog::info("dashboard: at most {} connections at once (a quarter of the open-file limit {})",
                 cap, limit.rlim_cur);
  }
  return std::min(wanted, cap);
}

class BeastDashboardServer;

// One connection. Its handlers run on its own strand; `waiting_` is also read by the accept
// handler to find a connection to displace.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(BeastDashboardServer* server, tcp::socket socket);
  ~Session();

  void Start() {
    asio::dispatch(stream_.get_executor(), [self = shared_from_this()] {
      self->stream_.expires_after(self->options().header_timeout);
      self->ReadHeader();
    });
  }

  // Makes room for a new connection: closes this one if it is waiting for a request, or else
  // once its response is written.
  void Displace() {
    asio::post(stream_.get_executor(), [self = shared_from_this()] {
      self->displaced_ = true;
      if (self->waiting_) self->Close();
    });
  }

  // Closes now, whatever it is doing (a handler already running finishes first; its answer is
  // not sent).
  void Shutdown() {
    asio::post(stream_.get_executor(), [self = shared_from_this()] {
      self->displaced_ = true;
      self->Close();
    });
  }

  bool waiting() const { return waiting_; }

  // The server's bookkeeping, guarded by its mutex.
  std::list<Session*>::iterator where;
  bool holds_slot = true;

 private:
  const DashboardServerOptions& options() const;

  void ReadHeader() {
    parser_.emplace();
    parser_->header_limit(static_cast<std::uint32_t>(options().header_limit));
    waiting_ = true;
    http::async_read_header(
        stream_, buffer_, *parser_,
        [self = shared_from_this()](beast::error_code ec, size_t) { self->OnHeader(ec); });
  }

  void OnHeader(beast::error_code ec);

  void Reply(http::response<http::string_body> response, bool linger) {
    response_ = std::move(response);
    response_.set(http::field::server, "onsetd");
    response_.set(http::field::cache_control, "no-store");
    if (response_.result() == http::status::method_not_allowed) {
      response_.set(http::field::allow, "GET");
    }
    response_.prepare_payload();
    stream_.expires_after(options().write_timeout);
    http::async_write(stream_, response_,
                      [self = shared_from_this(), linger](beast::error_code ec, size_t) {
                        if (ec) return self->Close();
                        if (linger) return self->Linger();
                        if (!self->response_.keep_alive() || self->displaced_) {
                          return self->Close();
                        }
                        self->WaitForNextRequest();
                      });
  }

  // An error answer, then the connection closes.
  void Fail(http::status status, const std::string& message) {
    http::response<http::string_body> response{status, 11};
    response.set(http::field::content_type, "application/json");
    response.body() = nlohmann::json{{"error", message}}.dump();
    response.keep_alive(false);
    Reply(std::move(response), /*linger=*/true);
  }

  void WaitForNextRequest() {
    if (buffer_.size() > 0) {  // pipelined
      stream_.expires_after(options().header_timeout);
      return ReadHeader();
    }
    waiting_ = true;
    stream_.expires_after(options().idle_timeout);
    stream_.async_read_some(buffer_.prepare(1024),
                            [self = shared_from_this()](beast::error_code ec, size_t n) {
                              if (ec) return self->Close();
                              self->buffer_.commit(n);
                              self->stream_.expires_after(self->options().header_timeout);
                              self->ReadHeader();
                            });
  }

  // Stops sending, then reads what the client still sends for a little while before closing.
  void Linger() {
    waiting_ = true;
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    stream_.expires_after(kLingerTime);
    Drain();
  }
  void Drain() {
    buffer_.consume(buffer_.size());
    stream_.async_read_some(buffer_.prepare(4096),
                            [self = shared_from_this()](beast::error_code ec, size_t n) {
                              self->lingered_ += n;
                              if (ec || self->lingered_ > kLingerBytes) return self->Close();
                              self->Drain();
                            });
  }

  void Close();

  BeastDashboardServer* const server_;
  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::empty_body>> parser_;
  http::response<http::string_body> response_;
  std::atomic<bool> waiting_{false};  // for a request: nothing of this connection's is in hand
  bool displaced_ = false;
  size_t lingered_ = 0;
};

class BeastDashboardServer final : public DashboardServer {
 public:
  BeastDashboardServer(HttpHandler handler, const DashboardServerOptions& options)
      : handler_(std::move(handler)),
        options_(options),
        max_connections_(ConnectionCap(std::max(1, options.max_connections))),
        io_(std::max(1, options.threads)),
        accept_strand_(asio::make_strand(io_)),
        acceptor_(accept_strand_),
        pause_(accept_strand_),
        backoff_(common::SystemClock(), options.accept_pause_min, options.accept_pause_max,
                 options.accept_log_interval) {}
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
    asio::post(accept_strand_, [this] { Accept(); });
    for (int i = 0; i < std::max(1, options_.threads); ++i) {
      threads_.emplace_back([this] { Run(); });
    }
    return absl::OkStatus();
  }

  const std::string& address() const override { return address_; }

  void Stop() override {
    std::vector<std::shared_ptr<Session>> open;
    {
      common::MutexLock lock(&mu_);
      if (stopped_) return;
      stopped_ = true;
      for (Session* s : sessions_) {
        if (std::shared_ptr<Session> p = s->weak_from_this().lock()) open.push_back(std::move(p));
      }
    }
    for (const std::shared_ptr<Session>& s : open) s->Shutdown();
    open.clear();
    asio::post(accept_strand_, [this] {
      beast::error_code ignored;
      acceptor_.close(ignored);
      pause_.cancel();
    });
    // Every handler ends once its socket is closed; then run() returns.
    for (std::thread& t : threads_) {
      if (t.joinable()) t.join();
    }
  }

  const HttpHandler& handler() const { return handler_; }
  const DashboardServerOptions& options() const { return options_; }

  // Frees the connection's place among max_connections (it is closing).
  void Release(Session* s) {
    common::MutexLock lock(&mu_);
    if (s->holds_slot) {
      s->holds_slot = false;
      --holding_;
    }
  }
  void Forget(Session* s) {
    common::MutexLock lock(&mu_);
    if (s->holds_slot) --holding_;
    sessions_.erase(s->where);
  }

 private:
  // A handler that throws must not end the thread, still less onsetd (std::terminate).
  void Run() {
    while (true) {
      try {
        io_.run();
        return;
      } catch (const std::exception& e) {
        spdlog::error("dashboard: {}", e.what());
      } catch (...) {
        spdlog::error("dashboard: unknown exception");
      }
    }
  }

  void Accept() {
    acceptor_.async_accept(
        asio::make_strand(io_),
        [this](beast::error_code ec, tcp::socket socket) { OnAccept(ec, std::move(socket)); });
  }

  void OnAccept(beast::error_code ec, tcp::socket socket) {
    if (ec == asio::error::operation_aborted || !acceptor_.is_open()) return;
    if (ec) {
      // E.g. EMFILE: the connection stays queued until descriptors free up. Retrying at once
      // would spin; pause instead, and say so once per interval.
      const AcceptBackoff::Step step = backoff_.Failed();
      if (step.log_failures) {
        spdlog::warn(
            "dashboard: cannot accept connections: {} ({} time(s) since the last message); "
            "pausing up to {} ms between tries",
            ec.message(), *step.log_failures, options_.accept_pause_max.count());
      }
      pause_.expires_after(step.pause);
      pause_.async_wait([this](beast::error_code wait_ec) {
        if (!wait_ec) Accept();
      });
      return;
    }
    backoff_.Succeeded();
    Admit(std::move(socket));
    Accept();
  }

  void Admit(tcp::socket socket) {
    std::shared_ptr<Session> displaced, session;
    {
      common::MutexLock lock(&mu_);
      if (stopped_) return;  // the socket closes as it goes out of scope
      if (holding_ >= max_connections_) {
        // Oldest first: the connection that has waited longest for its request.
        for (Session* s : sessions_) {
          if (!s->holds_slot || !s->waiting()) continue;
          displaced = s->weak_from_this().lock();
          if (!displaced) continue;
          s->holds_slot = false;
          --holding_;
          break;
        }
      }
      if (holding_ < max_connections_) {
        session = std::make_shared<Session>(this, std::move(socket));
        session->where = sessions_.insert(sessions_.end(), session.get());
        ++holding_;
      }
    }
    if (displaced) displaced->Displace();
    if (session) return session->Start();
    // Every connection is busy with a request.
    beast::error_code ignored;
    socket.non_blocking(true, ignored);
    const std::string& busy = ServiceUnavailable();
    (void)::send(socket.native_handle(), busy.data(), busy.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    socket.shutdown(tcp::socket::shutdown_both, ignored);
    socket.close(ignored);
  }

  const HttpHandler handler_;
  const DashboardServerOptions options_;
  const int max_connections_;
  asio::io_context io_;
  asio::strand<asio::io_context::executor_type> accept_strand_;
  tcp::acceptor acceptor_;  // and pause_, backoff_: on accept_strand_ only
  asio::steady_timer pause_;
  AcceptBackoff backoff_;
  std::string address_;
  std::vector<std::thread> threads_;

  common::Mutex mu_;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  std::list<Session*> sessions_ ABSL_GUARDED_BY(mu_);  // every live connection, oldest first
  int holding_ ABSL_GUARDED_BY(mu_) = 0;               // connections counted against the limit
};

Session::Session(BeastDashboardServer* server, tcp::socket socket)
    : server_(server),
      stream_(std::move(socket)),
      buffer_(server->options().header_limit + 8 * 1024) {}

Session::~Session() { server_->Forget(this); }

const DashboardServerOptions& Session::options() const { return server_->options(); }

void Session::Close() {
  waiting_ = false;
  server_->Release(this);  // before the client sees the end, so that it may connect again
  beast::error_code ignored;
  stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
  stream_.close();
}

void Session::OnHeader(beast::error_code ec) {
  waiting_ = false;
  if (ec == http::error::header_limit || ec == http::error::buffer_overflow) {
    return Fail(
        http::status::request_header_fields_too_large,
        "the request's header exceeds " + std::to_string(options().header_limit) + " bytes");
  }
  if (ec && IsMalformed(ec))
    return Fail(http::status::bad_request, "malformed request: " + ec.message());
  if (ec) return Close();  // closed early, timed out, displaced or stopped

  const http::request<http::empty_body>& req = parser_->get();
  const bool has_body = parser_->chunked() || parser_->content_length().value_or(0) > 0;
  if (has_body) {
    // Only GET is served, and it takes no body: the body is never read.
    if (req.method() != http::verb::get) {
      return Fail(http::status::method_not_allowed, "only GET is served");
    }
    return Fail(http::status::payload_too_large, "a GET takes no body");
  }

  HttpRequest request;
  request.method = std::string(req.method_string());
  request.target = std::string(req.target());
  if (auto it = req.find(http::field::authorization); it != req.end()) {
    request.authorization = std::string(it->value());
  }
  HttpResponse answer;
  try {
    answer = server_->handler()(request);
  } catch (const std::exception& e) {
    spdlog::error("dashboard: {} {}: {}", request.method, request.target, e.what());
    answer =
        HttpResponse{500, "application/json",
                     nlohmann::json{{"error", std::string("internal error: ") + e.what()}}.dump(
                         -1, ' ', false, nlohmann::json::error_handler_t::replace)};
  }
  http::response<http::string_body> response{static_cast<http::status>(answer.status),
                                             req.version()};
  response.set(http::field::content_type, answer.content_type);
  // The page loads nothing from elsewhere; say so to the browser too.
  response.set("Content-Security-Policy",
               "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
               "img-src 'self' data:");
  response.keep_alive(req.keep_alive() && !displaced_);
  response.body() = std::move(answer.body);
  Reply(std::move(response), /*linger=*/false);
}

}  // namespace

absl::StatusOr<std::unique_ptr<DashboardServer>> DashboardServer::Start(
    const std::string& listen, const DashboardApi* api, const DashboardServerOptions& options) {
  return Start(
      listen, [api](const HttpRequest& request) { return api->Handle(request); }, options);
}

absl::StatusOr<std::unique_ptr<DashboardServer>> DashboardServer::Start(
    const std::string& listen, HttpHandler handler, const DashboardServerOptions& options) {
  auto server = std::make_unique<BeastDashboardServer>(std::move(handler), options);
  if (absl::Status s = server->Bind(listen); !s.ok()) return s;
  return std::unique_ptr<DashboardServer>(std::move(server));
}

}  // namespace onset::coordinator
