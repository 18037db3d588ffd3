// The dashboard over HTTP/1.1 (Boost.Beast): DashboardApi on its own port, one thread per
// connection (a dashboard has a handful of viewers), requests with headers over 16 KiB refused.
// Plain HTTP: onsetd serves it on loopback unless told --insecure (see coordinator_server.h).
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "coordinator/dashboard_api.h"

namespace onset::coordinator {

class DashboardServer {
 public:
  // Binds `listen` ("host:port", port 0 picks one) and starts serving `api`, which must outlive
  // the server. Unavailable when the address cannot be bound.
  static absl::StatusOr<std::unique_ptr<DashboardServer>> Start(const std::string& listen,
                                                                const DashboardApi* api);
  virtual ~DashboardServer() = default;
  // "127.0.0.1:PORT", the port actually bound.
  virtual const std::string& address() const = 0;
  // Closes the port and every open connection, and joins their threads. Idempotent.
  virtual void Stop() = 0;
};

}  // namespace onset::coordinator
