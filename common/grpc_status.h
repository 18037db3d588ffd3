// absl::Status <-> grpc::Status. The codes are numerically identical (both follow
// google.rpc.Code), so the conversion keeps code and message.
//
// A status a server made with ToGrpcStatus also carries error details (a google.rpc.Status with
// the same code and message, gRPC's richer error model), which tells a client that the error
// came from the server, not from its own gRPC library: UNAVAILABLE from the server is an answer
// ("database write failed: database is locked"), UNAVAILABLE without details means no answer
// came (connection refused or lost). SentByServer tells them apart.
#pragma once

#include <string_view>

#include <grpcpp/support/status.h>

#include "absl/status/status.h"

namespace onset::common {

grpc::Status ToGrpcStatus(const absl::Status& status);
// Code and message; the error details are dropped.
absl::Status FromGrpcStatus(const grpc::Status& status);

// FromGrpcStatus with the RPC and the peer prefixed to the message, for client-side errors:
// "LeaseJob to 127.0.0.1:7070: failed to connect to all addresses".
absl::Status FromGrpcStatus(const grpc::Status& status, std::string_view rpc,
                            std::string_view peer);

// Whether a failed call's status was sent by the server (it carries error details, as every
// ToGrpcStatus error does) rather than made by the client's gRPC library when no answer came.
bool SentByServer(const grpc::Status& status);

}  // namespace onset::common
