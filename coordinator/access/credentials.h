// Credentials by role: what `onset token create`, `list` and `revoke` do, over the store's tokens
// (coordinator/store/access_store.h) and the registry the coordinator checks each call against
// (common/token_registry.h), which every change here updates at once: a token created works for
// the next call, a token revoked fails it, without a restart.
//
// A new token's secret is 32 random bytes (64 hex digits) from the system's CSPRNG; only its
// SHA-256 is kept, in the store and in the registry. The secret is returned once, to the caller
// that created it, and never logged.
//
// Thread-safe when the store is. Over the AccessStore interface: pure.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/access_role.h"
#include "common/token_registry.h"
#include "coordinator/store/access_store.h"

namespace onset::coordinator {

class Credentials {
 public:
  // `store` must outlive this object; `registry` is the one calls are checked against.
  Credentials(AccessStore* store, std::shared_ptr<common::TokenRegistry> registry)
      : store_(store), registry_(std::move(registry)) {}

  // Puts every token of the store that works into the registry (at start, before serving).
  absl::Status Load();

  struct Created {
    TokenRecord token;
    std::string secret;  // what its holder presents; shown once
  };
  // A new token named `name` of role `role` (as common::RoleName spells it), created by
  // `creator`, accepted from now on. InvalidArgument for a bad name (common::CheckTokenName) or
  // an unknown role; the store's AlreadyExists and ResourceExhausted.
  absl::StatusOr<Created> Create(const std::string& name, const std::string& role,
                                 const common::Caller& creator);

  // Revokes the token named `name`: refused from now on. FailedPrecondition for the token file's
  // (common::kFileTokenName: it is replaced in its file, and onsetd restarted); the store's
  // NotFound and FailedPrecondition.
  absl::StatusOr<TokenRecord> Revoke(const std::string& name, const common::Caller& revoker);

  // Every token of the store, revoked ones too, in the order they were created.
  absl::StatusOr<std::vector<TokenRecord>> List() { return store_->ListTokens(); }

 private:
  AccessStore* const store_;
  const std::shared_ptr<common::TokenRegistry> registry_;
};

}  // namespace onset::coordinator
