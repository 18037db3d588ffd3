// The tokens a coordinator accepts, in memory: each by the SHA-256 of its secret, with its name
// and role (common/access_role.h). The coordinator loads them at start (its token file, as the
// admin named kFileTokenName, and the tokens of its database) and adds or removes one as
// `onset token create` and `onset token revoke` change them, so that a change holds for the next
// call. No gRPC: common/grpc_auth.h checks calls against a registry, the dashboard and /metrics
// their Authorization headers (BearerHeaderCaller).
//
// A call's secret is looked up by its digest: what a lookup's time may tell is about the digest
// of what the caller sent, which says nothing of any token's secret. Secrets themselves are
// never kept.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "absl/status/status.h"
#include "common/access_role.h"
#include "common/mutex.h"

namespace onset::common {

// The name of the token in the coordinator's token file (onsetd --token-file), an admin token.
// Reserved: no token of the database may take it.
inline constexpr char kFileTokenName[] = "onsetd.token";
// A token name: [a-z0-9][a-z0-9._-]{0,63}.
inline constexpr size_t kMaxTokenNameBytes = 64;

// OK when `name` may name a new token: 1 to kMaxTokenNameBytes of lowercase letters, digits,
// '.', '_' and '-', starting with a letter or digit, and not kFileTokenName. InvalidArgument
// saying which rule it breaks otherwise.
absl::Status CheckTokenName(std::string_view name);

// Thread-safe.
class TokenRegistry {
 public:
  TokenRegistry() = default;
  TokenRegistry(const TokenRegistry&) = delete;
  TokenRegistry& operator=(const TokenRegistry&) = delete;

  // A registry with one token, `secret`, the admin kFileTokenName: a coordinator's token file.
  static std::shared_ptr<TokenRegistry> WithFileToken(std::string_view secret);

  // Accepts the token whose secret has the SHA-256 (lowercase hex) `secret_sha256` as `caller`,
  // replacing a token of the same name.
  void Add(const std::string& secret_sha256, const Caller& caller);
  // Accepts `secret` as `caller` (Add of its digest).
  void AddSecret(std::string_view secret, const Caller& caller);
  // Stops accepting the token named `name`; nothing when there is none.
  void Remove(const std::string& name);

  // Who presents `secret`; none for a secret of no token.
  std::optional<Caller> Find(std::string_view secret) const;

  // The tokens accepted now.
  size_t size() const;

 private:
  mutable Mutex mu_;
  std::unordered_map<std::string, Caller> by_digest_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::string> digest_by_name_ ABSL_GUARDED_BY(mu_);
};

// Who an HTTP Authorization header "Bearer SECRET" names in `tokens`; none for another header or
// a secret of no token.
std::optional<Caller> BearerHeaderCaller(std::string_view authorization,
                                         const TokenRegistry& tokens);

}  // namespace onset::common
