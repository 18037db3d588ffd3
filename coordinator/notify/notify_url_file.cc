#include "coordinator/notify/notify_url_file.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/private_file.h"
#include "coordinator/notify/webhook_poster.h"

namespace onset::coordinator {

absl::StatusOr<std::vector<std::string>> ReadNotifyUrlFile(const std::string& path) {
  // One byte more than allowed tells a file that is too large from one that is just large enough.
  absl::StatusOr<std::string> text =
      common::ReadPrivateFile(path, "notify URL file", kMaxNotifyUrlFileBytes + 1);
  if (!text.ok()) return text.status();
  if (text->size() > kMaxNotifyUrlFileBytes) {
    return absl::InvalidArgumentError(absl::StrCat("notify URL file ", path, ": larger than ",
                                                   kMaxNotifyUrlFileBytes,
                                                   " bytes; it holds one URL a line"));
  }
  std::vector<std::string> urls;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(*text, '\n')) {
    ++line_number;
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || line.front() == '#') continue;
    const std::string url(line);
    if (absl::Status s = CheckWebhookUrl(url); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(path, ":", line_number, ": ", s.message()));
    }
    if (urls.size() == kMaxNotifyUrls) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": more than ", kMaxNotifyUrls, " URLs"));
    }
    urls.push_back(url);
  }
  if (urls.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "notify URL file ", path, " holds no URL: write one http(s) URL a line ('#' comments)"));
  }
  return urls;
}

}  // namespace onset::coordinator
