// The JSON-over-HTTP calls a mirror makes (MLflow's REST API), behind an interface so that the
// writer is tested with a fake and the real one (libcurl) against a real server.
//
// Thread-safety: a JsonHttp is called from one mirror thread.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>
#include "absl/status/statusor.h"

namespace onset::coordinator {

class JsonHttp {
 public:
  virtual ~JsonHttp() = default;
  // GET (body null) or POST `body` to BASE + `path` (e.g. "/api/2.0/mlflow/runs/get?run_id=X")
  // and returns the answer's JSON. Unavailable (worth retrying) for a transport error, a
  // timeout, 5xx, 408 or 429; NotFound for 404; AlreadyExists for an answer whose error_code is
  // RESOURCE_ALREADY_EXISTS; FailedPrecondition for any other answer, with the server's message.
  virtual absl::StatusOr<nlohmann::json> Call(const std::string& path,
                                              const nlohmann::json& body) = 0;
};

// OK when `base` can be a server's base URL: http:// or https://, a host, an optional port and
// path, no user info (a password on a command line is every local user's to read: a token goes
// in the environment instead), no query or fragment. InvalidArgument saying which otherwise.
absl::Status CheckBaseUrl(const std::string& base);

// On libcurl: http and https against `base` ("http://127.0.0.1:5000", no user info), each call
// bounded by `timeout`, redirects not followed, answers of at most 16 MiB, a bearer token when
// `token` is not empty.
std::unique_ptr<JsonHttp> NewCurlJsonHttp(std::string base, std::string token,
                                          std::chrono::milliseconds timeout);

}  // namespace onset::coordinator
