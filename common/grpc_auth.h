// Bearer tokens and TLS on gRPC: the coordinator's check of each call's "authorization" header,
// and client channels that put the token on every call. Tokens themselves (files, comparison)
// live in common/auth_token.h, PEM files in common/tls_files.h, a client's settings in
// common/client_security.h.
//
// The check runs at the top of every handler because gRPC 1.51 offers no earlier place that
// works without TLS: a server interceptor cannot fail a call before its handler runs, and an
// AuthMetadataProcessor cannot be set on insecure server credentials. The coordinator's tests call
// every method of every service without a token, so a handler that forgets the check fails them.
#pragma once

#include <grpcpp/channel.h>
#include <grpcpp/security/server_credentials.h>
#include <grpcpp/server_context.h>
#include <grpcpp/support/status.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "common/client_security.h"
#include "common/clock.h"
#include "common/log_throttle.h"
#include "common/mutex.h"
#include "common/tls_files.h"

namespace onset::common {

// What a call without the right token gets, with status UNAUTHENTICATED. The same for a missing
// and a wrong token, so that a caller learns nothing about the token.
inline constexpr char kUnauthenticatedMessage[] =
    "missing or wrong token: pass --token-file or set ONSET_TOKEN";

// Thread-safe.
class BearerTokenChecker {
 public:
  // `clock` (which must outlive the checker) paces the log of refused calls.
  explicit BearerTokenChecker(std::string token, const Clock& clock = SystemClock())
      : token_(std::move(token)), refusals_(clock, kRefusalLogInterval) {}

  // OK when the call carries exactly one "authorization: Bearer <token>" header with this token
  // (compared in constant time); UNAUTHENTICATED with kUnauthenticatedMessage otherwise, and the
  // refusal is logged through LogRefusal.
  grpc::Status Check(const grpc::ServerContext& context) const;

  // Logs that a call from `peer` was refused for `problem`: the first refusal at once, then at
  // most one line per kRefusalLogInterval that counts the refusals left out and names the
  // latest, so that calls without a token (which anyone can send) cannot flood the log.
  // Thread-safe.
  void LogRefusal(const std::string& peer, const char* problem) const;

  static constexpr std::chrono::minutes kRefusalLogInterval{1};

 private:
  const std::string token_;
  mutable Mutex mu_;
  mutable LogThrottle refusals_ ABSL_GUARDED_BY(mu_);
};

// Credentials for the coordinator's port: TLS with `tls` (no client certificates), or plaintext.
std::shared_ptr<grpc::ServerCredentials> NewServerCredentials(const std::optional<TlsKeyPair>& tls);

// A channel to `address` ("host:port") on which every call carries the token (none when it is
// empty), with onset's keepalive settings. With TLS the certificate must name the host of
// `address`.
std::shared_ptr<grpc::Channel> NewClientChannel(const std::string& address,
                                                const ClientSecurity& security);

}  // namespace onset::common
