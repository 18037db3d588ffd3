// How a notification leaves onsetd: one HTTP POST of a JSON body to a webhook URL, behind an
// interface so that the queue (notifier.h) is tested with a fake and the real one (libcurl) is
// tested against a local receiver.
//
// Webhook URLs are secrets: a Slack incoming webhook carries its token in the path, others in
// the query. Nothing here ever puts more of a URL than RedactedUrl in a message or a log line.
//
// Thread-safety: a WebhookPoster is called from several threads at once (one per URL).
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "absl/status/status.h"

namespace onset::coordinator {

class WebhookPoster {
 public:
  virtual ~WebhookPoster() = default;

  // POSTs `json_body` (Content-Type: application/json) to `url` and returns within about
  // `timeout`, connecting included. OK for a 2xx answer. Unavailable (worth retrying) for a
  // transport error, a timeout, 5xx, 408 or 429; FailedPrecondition (retrying will not help) for
  // any other answer (4xx, a redirect, which is not followed); InvalidArgument for a URL that is
  // not http(s). Messages name the URL as RedactedUrl does, e.g. "POST https://host/…: HTTP 500".
  virtual absl::Status Post(const std::string& url, const std::string& json_body,
                            std::chrono::milliseconds timeout) = 0;
};

// The real poster on libcurl: http and https (the peer verified against the system's CAs), the
// proxy of the usual environment variables, redirects not followed, the answer's body read and
// dropped. Initialises libcurl once per process, on the first call.
std::unique_ptr<WebhookPoster> NewCurlPoster();

// `url` safe to log: its scheme and host (and port), without user info, path, query or
// fragment; "https://hooks.slack.com/…" for "https://hooks.slack.com/services/T0/B0/XYZ".
// "(not a URL)" when it has no "scheme://".
std::string RedactedUrl(const std::string& url);

// OK when `url` can be a webhook: http:// or https:// followed by a host. InvalidArgument
// naming the redacted URL otherwise: what a flag parser checks before anything is sent.
absl::Status CheckWebhookUrl(const std::string& url);

}  // namespace onset::coordinator
