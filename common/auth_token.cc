#include "common/auth_token.h"

#include <cstdlib>
#include <optional>

#include "base/durable_file.h"
#include "common/private_file.h"
#include "common/random_id.h"

namespace onset::common {
namespace {

// A token file holds one short line; anything longer is not a token file.
constexpr size_t kMaxTokenFileBytes = 4096;

std::string FirstLineTrimmed(const std::string& text) {
  std::string line = text.substr(0, text.find('\n'));
  const char* space = " \t\r\v\f";
  size_t begin = line.find_first_not_of(space);
  if (begin == std::string::npos) return "";
  size_t end = line.find_last_not_of(space);
  return line.substr(begin, end - begin + 1);
}

// Writes a new token to `path`, mode 0600, unless the file exists: a reader never sees a
// partial file and the first of two racing creators wins (base::IfExists::kKeep).
absl::Status CreateTokenFile(const std::string& path) {
  if (std::optional<std::string> error = base::TryWriteFileDurably(
          path, RandomHex(kTokenBytes) + "\n", {0600, base::IfExists::kKeep})) {
    return absl::UnavailableError("cannot create token file " + path + ": " + *error);
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateToken(std::string_view token) {
  if (token.empty()) return absl::InvalidArgumentError("the token is empty");
  for (char c : token) {
    if (c <= ' ' || c > '~') {
      return absl::InvalidArgumentError(
          "the token may hold only visible ASCII characters (no spaces)");
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadTokenFile(const std::string& path) {
  absl::StatusOr<std::string> text = ReadPrivateFile(path, "token file", kMaxTokenFileBytes);
  if (!text.ok()) return text.status();
  std::string token = FirstLineTrimmed(*text);
  if (absl::Status s = ValidateToken(token); !s.ok()) {
    return absl::InvalidArgumentError("token file " + path + ": " + std::string(s.message()));
  }
  return token;
}

absl::StatusOr<std::string> LoadOrCreateTokenFile(const std::string& path) {
  absl::StatusOr<std::string> token = ReadTokenFile(path);
  if (absl::IsNotFound(token.status())) {
    if (absl::Status s = CreateTokenFile(path); !s.ok()) return s;
    token = ReadTokenFile(path);
  }
  if (!token.ok()) return token.status();
  if (token->size() < kMinTokenLength) {
    return absl::FailedPreconditionError("the token in " + path + " is too short (" +
                                         std::to_string(token->size()) + " characters, at least " +
                                         std::to_string(kMinTokenLength) +
                                         "): remove the file to have a new one made");
  }
  return token;
}

TokenSources TokenSources::FromEnvironment(std::string flag_file, std::string default_file) {
  auto env = [](const char* name) {
    const char* value = std::getenv(name);
    return std::string(value != nullptr ? value : "");
  };
  return TokenSources{std::move(flag_file), env("ONSET_TOKEN"), env("ONSET_TOKEN_FILE"),
                      std::move(default_file)};
}

TokenSource ChooseTokenSource(const TokenSources& sources) {
  using Kind = TokenSource::Kind;
  if (!sources.flag_file.empty()) return {Kind::kFlagFile, sources.flag_file};
  if (!sources.env_token.empty()) return {Kind::kEnvToken, ""};
  if (!sources.env_token_file.empty()) return {Kind::kEnvTokenFile, sources.env_token_file};
  if (!sources.default_file.empty()) return {Kind::kDefaultFile, sources.default_file};
  return {};
}

absl::StatusOr<std::string> ResolveClientToken(const TokenSources& sources) {
  const TokenSource source = ChooseTokenSource(sources);
  switch (source.kind) {
    case TokenSource::Kind::kFlagFile:
    case TokenSource::Kind::kEnvTokenFile:
      return ReadTokenFile(source.file);
    case TokenSource::Kind::kEnvToken:
      if (absl::Status s = ValidateToken(sources.env_token); !s.ok()) {
        return absl::InvalidArgumentError("ONSET_TOKEN: " + std::string(s.message()));
      }
      return sources.env_token;
    case TokenSource::Kind::kDefaultFile: {
      absl::StatusOr<std::string> token = ReadTokenFile(source.file);
      if (!absl::IsNotFound(token.status())) return token;
      break;
    }
    case TokenSource::Kind::kNone:
      break;
  }
  return absl::NotFoundError(
      std::string("no token: pass --token-file FILE or set ONSET_TOKEN (onsetd keeps its token "
                  "in ") +
      kTokenFileName + " next to its database)");
}

}  // namespace onset::common
