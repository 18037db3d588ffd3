// Keepalive settings shared by the coordinator and its clients, kept in one place so the two
// sides agree: the server must accept pings at least as often as clients send them, or it drops
// them with "too_many_pings" (docs/build-notes.md, "gRPC keepalive").
#pragma once

#include <grpcpp/server_builder.h>
#include <grpcpp/support/channel_arguments.h>

namespace onset::common {

// Clients ping an idle connection every 20 s and give up on it after 10 s without an answer.
inline constexpr int kClientKeepaliveTimeMs = 20'000;
inline constexpr int kClientKeepaliveTimeoutMs = 10'000;
// The server tolerates pings this frequent (must not exceed kClientKeepaliveTimeMs).
inline constexpr int kServerMinRecvPingIntervalMs = 10'000;
// The server pings idle clients to reap dead connections.
inline constexpr int kServerKeepaliveTimeMs = 60'000;
inline constexpr int kServerKeepaliveTimeoutMs = 20'000;

void ApplyServerKeepalive(grpc::ServerBuilder* builder);

// Channel arguments for every onset client (worker, CLI).
grpc::ChannelArguments ClientChannelArguments();

}  // namespace onset::common
