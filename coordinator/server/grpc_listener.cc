#include "coordinator/server/grpc_listener.h"

#include "common/grpc_auth.h"
#include "common/grpc_keepalive.h"
#include "common/listen_address.h"
#include "grpc/health/v1/health.pb.h"

namespace onset::coordinator {

absl::StatusOr<GrpcListener> StartGrpcListener(
    const std::string& listen, const std::optional<common::TlsKeyPair>& tls,
    const std::vector<grpc::Service*>& services,
    std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>>
        interceptors) {
  // The standard health service (grpc.health.v1.Health), answered without the token so that
  // probes need none: SERVING by default; the coordinator sets it (health_monitor.h).
  grpc::EnableDefaultHealthCheckService(true);
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(listen, common::NewServerCredentials(tls), &port);
  common::ApplyServerKeepalive(&builder);
  // gRPC sets SO_REUSEPORT by default: a second server on the same port would bind and silently
  // share the traffic (and a coordinator's workers) with the first.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  for (grpc::Service* service : services) builder.RegisterService(service);
  if (!interceptors.empty()) builder.experimental().SetInterceptorCreators(std::move(interceptors));
  GrpcListener out;
  out.server = builder.BuildAndStart();
  if (!out.server || port == 0) {
    if (out.server) out.server->Shutdown();
    return absl::UnavailableError("cannot listen on " + listen + " (address in use or not local?)");
  }
  out.address = common::HostOf(listen) + ":" + std::to_string(port);
  return out;
}

const google::protobuf::ServiceDescriptor& HealthServiceDescriptor() {
  return *grpc::health::v1::HealthCheckRequest::descriptor()->file()->FindServiceByName("Health");
}

}  // namespace onset::coordinator
