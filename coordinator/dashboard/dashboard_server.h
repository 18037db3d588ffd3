// The dashboard over HTTP/1.1 (Boost.Beast, asynchronous): DashboardApi on its own port, served
// by a small fixed pool of threads whatever the number of connections. Whoever can reach the
// port must not be able to take onsetd down with it, so every resource is bounded:
//   - connections: at most `max_connections` at once (never more than a quarter of the process's
//     open-file limit, so that gRPC and SQLite keep descriptors). At the limit a new connection
//     takes the place of the one that has waited longest for its request; when every connection
//     is busy with a request, the new one is answered 503 and closed at once;
//   - time: a request header must arrive within `header_timeout`, a kept-alive connection may
//     wait `idle_timeout` for its next request, a response must be written within
//     `write_timeout`;
//   - size: a header over `header_limit` bytes gets 431, a malformed request 400, a request with
//     a body 413 (405 when its method is not GET); all three close the connection;
//   - accept errors (e.g. out of descriptors) pause the accept loop (accept_backoff.h) and are
//     logged at most once per interval.
// A connection is closed as soon as its last response is written. Plain HTTP: onsetd serves it
// on loopback unless told --insecure (see coordinator_server.h).
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "coordinator/dashboard/dashboard_api.h"

namespace onset::coordinator {

struct DashboardServerOptions {
  int max_connections = 256;
  // From accepting a connection (or from a kept-alive connection's first byte of its next
  // request) to the end of the request's header.
  std::chrono::milliseconds header_timeout{10'000};
  // How long a kept-alive connection may wait for the first byte of its next request. The page
  // asks every 2 s.
  std::chrono::milliseconds idle_timeout{15'000};
  // To write one response to a client that reads slowly.
  std::chrono::milliseconds write_timeout{30'000};
  // Request line and header fields, in bytes.
  size_t header_limit = 16 * 1024;
  // The threads that serve every connection (the API's queries run on them too).
  int threads = 4;
  // After a failed accept: pause `accept_pause_min`, doubling up to `accept_pause_max` while
  // accepts keep failing; at most one log line per `accept_log_interval`.
  std::chrono::milliseconds accept_pause_min{50};
  std::chrono::milliseconds accept_pause_max{500};
  std::chrono::milliseconds accept_log_interval{10'000};
};

// What answers a request; called on the server's threads, concurrently.
using HttpHandler = std::function<HttpResponse(const HttpRequest&)>;

class DashboardServer {
 public:
  // Binds `listen` ("host:port", port 0 picks one) and starts serving `api`, which must outlive
  // the server. Unavailable when the address cannot be bound.
  static absl::StatusOr<std::unique_ptr<DashboardServer>> Start(
      const std::string& listen, const DashboardApi* api,
      const DashboardServerOptions& options = {});
  // The same with any handler.
  static absl::StatusOr<std::unique_ptr<DashboardServer>> Start(
      const std::string& listen, HttpHandler handler, const DashboardServerOptions& options = {});
  virtual ~DashboardServer() = default;
  // "127.0.0.1:PORT", the port actually bound.
  virtual const std::string& address() const = 0;
  // Closes the port and every open connection, and joins the threads. A request being handled
  // finishes first. Idempotent.
  virtual void Stop() = 0;
};

}  // namespace onset::coordinator
