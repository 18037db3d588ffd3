#include "coordinator/access/credentials.h"

#include <optional>

#include "base/sha256.h"
#include "common/auth_token.h"
#include "common/random_id.h"

namespace onset::coordinator {

absl::Status Credentials::Load() {
  absl::StatusOr<std::vector<TokenRecord>> tokens = store_->ListTokens();
  if (!tokens.ok()) return tokens.status();
  for (const TokenRecord& token : *tokens) {
    if (token.revoked_unix_ms == 0) {
      registry_->Add(token.secret_sha256, common::Caller{token.name, token.role});
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<Credentials::Created> Credentials::Create(const std::string& name,
                                                         const std::string& role,
                                                         const common::Caller& creator) {
  if (absl::Status s = common::CheckTokenName(name); !s.ok()) return s;
  const std::optional<common::Role> parsed = common::ParseRole(role);
  if (!parsed) {
    return absl::InvalidArgumentError("role '" + role + "': must be " + common::kRoleNames);
  }
  Created created;
  created.secret = common::RandomHex(common::kTokenBytes);
  TokenRecord token;
  token.name = name;
  token.role = *parsed;
  token.secret_sha256 = base::Sha256Hex(created.secret);
  token.created_by = creator.token_name;
  absl::StatusOr<TokenRecord> kept = store_->AddToken(token);
  if (!kept.ok()) return kept.status();
  registry_->Add(kept->secret_sha256, common::Caller{kept->name, kept->role});
  created.token = *std::move(kept);
  return created;
}

absl::StatusOr<TokenRecord> Credentials::Revoke(const std::string& name,
                                                const common::Caller& revoker) {
  if (name == common::kFileTokenName) {
    return absl::FailedPreconditionError(
        std::string("'") + common::kFileTokenName +
        "' is the coordinator's token file: to change it, write a new token into that file "
        "(onsetd --token-file; remove it to have one made) and restart onsetd");
  }
  absl::StatusOr<TokenRecord> revoked = store_->RevokeToken(name, revoker.token_name);
  if (!revoked.ok()) return revoked.status();
  registry_->Remove(name);
  return revoked;
}

}  // namespace onset::coordinator
