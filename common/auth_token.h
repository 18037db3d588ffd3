// Bearer tokens: the secret that every call to the coordinator carries. onsetd makes one on its
// first start and keeps it next to its database (onsetd.token, mode 0600), an admin token; others,
// of weaker roles, are made with `onset token create` (common/token_registry.h holds the ones a
// coordinator accepts). The CLI and the workers read theirs from a file or from ONSET_TOKEN. A
// token file that group or others may access is refused, as ssh refuses such a key
// (common/private_file.h). No gRPC here: common/grpc_auth.h puts tokens on calls.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace onset::common {

// The token file's name inside a coordinator's data directory.
inline constexpr char kTokenFileName[] = "onsetd.token";
// A new token is this many random bytes, written as twice as many hex digits.
inline constexpr int kTokenBytes = 32;
// The shortest token a coordinator serves with (a hand-written token file may be weaker).
inline constexpr size_t kMinTokenLength = 32;

// OK when `token` can travel in a header: not empty, visible ASCII only (no spaces or control
// characters). InvalidArgument naming the problem (never the token) otherwise.
absl::Status ValidateToken(std::string_view token);

// The token in `path`: its first line without surrounding whitespace. NotFound when the file
// does not exist; PermissionDenied when it is not a regular file or group or others have any
// access to it (the message says to chmod 600); InvalidArgument for an invalid token.
absl::StatusOr<std::string> ReadTokenFile(const std::string& path);

// The coordinator's token: read from `path`, or, when there is no such file, a new random one
// written there with mode 0600 (the directory must exist). Safe when two processes race to create
// it: both end up with the same token. Besides ReadTokenFile's errors, FailedPrecondition for a
// token shorter than kMinTokenLength.
absl::StatusOr<std::string> LoadOrCreateTokenFile(const std::string& path);

// Where a client looks for its token, in this order: the --token-file flag, ONSET_TOKEN,
// ONSET_TOKEN_FILE, then `default_file` when that file exists (the CLI's onset-data/onsetd.token).
struct TokenSources {
  std::string flag_file;
  std::string env_token;
  std::string env_token_file;
  std::string default_file;

  // `flag_file` and `default_file` as given; the variables from this process's environment.
  static TokenSources FromEnvironment(std::string flag_file, std::string default_file);
};

// The first source that is set, which ResolveClientToken reads: its kind and, for a file, the
// file as given (kDefaultFile whenever `default_file` is set: reading it tells whether it exists).
struct TokenSource {
  enum class Kind { kNone, kFlagFile, kEnvToken, kEnvTokenFile, kDefaultFile };
  Kind kind = Kind::kNone;
  std::string file;
};
TokenSource ChooseTokenSource(const TokenSources& sources);

// The client's token from the first source that is set. The errors of ReadTokenFile for a file
// that was named; NotFound saying how to pass a token when no source is set.
absl::StatusOr<std::string> ResolveClientToken(const TokenSources& sources);

}  // namespace onset::common
