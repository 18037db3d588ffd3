// How a client (the CLI, a worker) proves itself to the coordinator and checks the coordinator:
// the bearer token it sends, and the certificates it trusts when TLS is on. Plain data, no gRPC;
// common/grpc_auth.h turns it into a channel.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "common/auth_token.h"

namespace onset::common {

struct ClientSecurity {
  std::string token;          // sent on every call as "authorization: Bearer <token>" if set
  std::string tls_roots_pem;  // not empty: TLS, trusting these certificates; empty: plaintext
};

// A client's security from its flags and environment: the token from `token` (see
// ResolveClientToken); TLS when `tls_ca_file`, or else the environment's ONSET_TLS_CA, names a
// PEM file of the certificates to trust. Errors name the flag or file to fix. When no token
// source is set at all, the token is left empty unless `require_token` (then NotFound saying how
// to pass one): a client may still reach a coordinator and be told what it wants.
absl::StatusOr<ClientSecurity> LoadClientSecurity(const TokenSources& token,
                                                  const std::string& tls_ca_file,
                                                  bool require_token = true);

}  // namespace onset::common
