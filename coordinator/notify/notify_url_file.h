// Where onsetd reads its webhook URLs: a file (onsetd --notify-url-file), never its command line,
// which every local user reads in /proc/PID/cmdline. A webhook URL is a secret (a Slack incoming
// webhook's token is its path; others carry one in the query or as user:password@), so the file
// is read as a token file is (common/private_file.h): refused when group or others may access it,
// or when it is not a regular file.
//
// The file holds one URL a line; blank lines and lines whose first non-blank character is '#' are
// left out, and each line is trimmed. Messages name a URL only as RedactedUrl does.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace onset::coordinator {

// A notify URL file is at most this large and holds at most this many URLs (each gets a queue and
// a thread of its own: notifier.h).
inline constexpr size_t kMaxNotifyUrlFileBytes = 64 * 1024;
inline constexpr size_t kMaxNotifyUrls = 100;

// The URLs of the file at `path`, in its order. ReadPrivateFile's errors (NotFound,
// PermissionDenied with what to do); InvalidArgument "PATH:LINE: webhook URL https://host/…: ..."
// for a line that is not an http(s) URL (CheckWebhookUrl), for a file larger than
// kMaxNotifyUrlFileBytes or with more than kMaxNotifyUrls URLs, or for one with none.
absl::StatusOr<std::vector<std::string>> ReadNotifyUrlFile(const std::string& path);

}  // namespace onset::coordinator
