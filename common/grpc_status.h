// absl::Status <-> grpc::Status. The codes are numerically identical (both follow
// google.rpc.Code), so the conversion keeps code and message; gRPC's error details are dropped.
#pragma once

#include <string_view>

#include <grpcpp/support/status.h>

#include "absl/status/status.h"

namespace onset::common {

grpc::Status ToGrpcStatus(const absl::Status& status);
absl::Status FromGrpcStatus(const grpc::Status& status);

// FromGrpcStatus with the RPC and the peer prefixed to the message, for client-side errors:
// "LeaseJob to 127.0.0.1:7070: failed to connect to all addresses".
absl::Status FromGrpcStatus(const grpc::Status& status, std::string_view rpc,
                            std::string_view peer);

}  // namespace onset::common
