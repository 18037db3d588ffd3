#include "common/token_registry.h"

#include "base/sha256.h"

namespace onset::common {

absl::Status CheckTokenName(std::string_view name) {
  if (name.empty() || name.size() > kMaxTokenNameBytes) {
    return absl::InvalidArgumentError("a token name has 1 to " +
                                      std::to_string(kMaxTokenNameBytes) + " characters");
  }
  const auto lower_or_digit = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
  };
  if (!lower_or_digit(name.front())) {
    return absl::InvalidArgumentError("token name '" + std::string(name) +
                                      "': must start with a lowercase letter or a digit");
  }
  for (char c : name) {
    if (!lower_or_digit(c) && c != '.' && c != '_' && c != '-') {
      return absl::InvalidArgumentError(
          "token name: may hold only lowercase letters, digits, '.', '_' and '-'");
    }
  }
  if (name == kFileTokenName) {
    return absl::InvalidArgumentError(std::string("token name '") + kFileTokenName +
                                      "' is the coordinator's token file's: choose another");
  }
  return absl::OkStatus();
}

std::shared_ptr<TokenRegistry> TokenRegistry::WithFileToken(std::string_view secret) {
  auto registry = std::make_shared<TokenRegistry>();
  registry->AddSecret(secret, Caller{kFileTokenName, Role::kAdmin});
  return registry;
}

void TokenRegistry::Add(const std::string& secret_sha256, const Caller& caller) {
  MutexLock lock(&mu_);
  if (auto old = digest_by_name_.find(caller.token_name); old != digest_by_name_.end()) {
    by_digest_.erase(old->second);
  }
  by_digest_[secret_sha256] = caller;
  digest_by_name_[caller.token_name] = secret_sha256;
}

void TokenRegistry::AddSecret(std::string_view secret, const Caller& caller) {
  Add(base::Sha256Hex(secret), caller);
}

void TokenRegistry::Remove(const std::string& name) {
  MutexLock lock(&mu_);
  auto it = digest_by_name_.find(name);
  if (it == digest_by_name_.end()) return;
  by_digest_.erase(it->second);
  digest_by_name_.erase(it);
}

std::optional<Caller> TokenRegistry::Find(std::string_view secret) const {
  const std::string digest = base::Sha256Hex(secret);  // outside the lock: the costly part
  MutexLock lock(&mu_);
  auto it = by_digest_.find(digest);
  if (it == by_digest_.end()) return std::nullopt;
  return it->second;
}

size_t TokenRegistry::size() const {
  MutexLock lock(&mu_);
  return by_digest_.size();
}

std::optional<Caller> BearerHeaderCaller(std::string_view authorization,
                                         const TokenRegistry& tokens) {
  constexpr std::string_view kPrefix = "Bearer ";
  if (authorization.substr(0, kPrefix.size()) != kPrefix) return std::nullopt;
  return tokens.Find(authorization.substr(kPrefix.size()));
}

}  // namespace onset::common
