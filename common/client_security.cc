#include "common/client_security.h"

#include <cstdlib>
#include <utility>

#include "common/tls_files.h"

namespace onset::common {

absl::StatusOr<ClientSecurity> LoadClientSecurity(const TokenSources& token,
                                                  const std::string& tls_ca_file,
                                                  bool require_token) {
  ClientSecurity security;
  const bool named =
      !token.flag_file.empty() || !token.env_token.empty() || !token.env_token_file.empty();
  absl::StatusOr<std::string> resolved = ResolveClientToken(token);
  if (resolved.ok()) {
    security.token = std::move(*resolved);
  } else if (named || require_token || !absl::IsNotFound(resolved.status())) {
    return resolved.status();
  }
  std::string ca_file = tls_ca_file;
  if (const char* env = std::getenv("ONSET_TLS_CA"); ca_file.empty() && env != nullptr) {
    ca_file = env;
  }
  if (!ca_file.empty()) {
    absl::StatusOr<std::string> roots = ReadTlsRootCertificates(ca_file);
    if (!roots.ok()) return roots.status();
    security.tls_roots_pem = std::move(*roots);
  }
  return security;
}

}  // namespace onset::common
