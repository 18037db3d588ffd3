// Starting a gRPC server the way every onset server starts one: on `listen`, with the keepalive
// settings clients expect (common/grpc_keepalive.h), without SO_REUSEPORT, so that a second
// server on the same port fails to bind instead of silently sharing its traffic, and with the
// standard gRPC health service (server->GetHealthCheckService()).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <google/protobuf/descriptor.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/support/server_interceptor.h>

#include "absl/status/statusor.h"
#include "common/tls_files.h"

namespace onset::coordinator {

struct GrpcListener {
  std::unique_ptr<grpc::Server> server;
  std::string address;  // "HOST:PORT" with the port actually bound
};

// Serves `services` (not owned; they must outlive the server) on `listen` ("host:port", port 0
// picks a free one), over TLS when `tls` is set, every call passing through `interceptors` (in
// order). Unavailable naming the address when it cannot be bound.
absl::StatusOr<GrpcListener> StartGrpcListener(
    const std::string& listen, const std::optional<common::TlsKeyPair>& tls,
    const std::vector<grpc::Service*>& services,
    std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>>
        interceptors = {});

// The service a listener serves besides those it is given, the standard health service
// (grpc.health.v1.Health), as its generated descriptor describes it.
const google::protobuf::ServiceDescriptor& HealthServiceDescriptor();

}  // namespace onset::coordinator
