// Bearer tokens and TLS on gRPC: the coordinator's check of each call's "authorization" header
// and of the token's role against the method's, and client channels that put the token on every
// call. Tokens themselves live in common/auth_token.h (files) and common/token_registry.h (the
// ones a coordinator accepts, with their roles), PEM files in common/tls_files.h, a client's
// settings in common/client_security.h.
//
// The check runs at the top of every handler because gRPC 1.51 offers no earlier place that
// works without TLS: a server interceptor cannot fail a call before its handler runs, and an
// AuthMetadataProcessor cannot be set on insecure server credentials. Each handler names what it
// needs (coordinator/rpc/method_roles.h). The coordinator's tests call every method of every
// service without a token and with a token of a role too weak for it, so a handler that forgets
// the check, or names another method's role, fails them.
#pragma once

#include <grpcpp/channel.h>
#include <grpcpp/security/server_credentials.h>
#include <grpcpp/server_context.h>
#include <grpcpp/support/status.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "common/access_role.h"
#include "common/client_security.h"
#include "common/clock.h"
#include "common/log_throttle.h"
#include "common/mutex.h"
#include "common/tls_files.h"
#include "common/token_registry.h"

namespace onset::common {

// What a call without the right token gets, with status UNAUTHENTICATED. The same for a missing
// and a wrong token, so that a caller learns nothing about the token.
inline constexpr char kUnauthenticatedMessage[] =
    "missing or wrong token: pass --token-file or set ONSET_TOKEN";

// Thread-safe.
class BearerTokenChecker {
 public:
  // Accepts the tokens of `tokens`, which may change while calls are checked (a token created or
  // revoked holds for the next call). `clock` (which must outlive the checker) paces the log of
  // refused calls.
  explicit BearerTokenChecker(std::shared_ptr<const TokenRegistry> tokens,
                              const Clock& clock = SystemClock())
      : tokens_(std::move(tokens)), refusals_(clock, kRefusalLogInterval) {}
  // Accepts the one token `token`, as the admin kFileTokenName (a coordinator's token file).
  explicit BearerTokenChecker(std::string_view token, const Clock& clock = SystemClock())
      : BearerTokenChecker(TokenRegistry::WithFileToken(token), clock) {}

  // OK when the call carries exactly one "authorization: Bearer <token>" header with a token of
  // the registry whose role allows `method` (common::RoleAllows); then `caller` (when not null)
  // is who made the call. UNAUTHENTICATED with kUnauthenticatedMessage for a missing or unknown
  // token (a revoked one too); PERMISSION_DENIED "token 'NAME' has role ROLE; METHOD needs ROLE"
  // for a token whose role is too weak. Refusals are logged through LogRefusal.
  grpc::Status Check(const grpc::ServerContext& context, const MethodAccess& method,
                     Caller* caller = nullptr) const;

  // Logs that a call from `peer` was refused for `problem`: the first refusal at once, then at
  // most one line per kRefusalLogInterval that counts the refusals left out and names the
  // latest, so that calls without a token (which anyone can send) cannot flood the log.
  // Thread-safe.
  void LogRefusal(const std::string& peer, const std::string& problem) const;

  static constexpr std::chrono::minutes kRefusalLogInterval{1};

 private:
  const std::shared_ptr<const TokenRegistry> tokens_;
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
