// The libcurl poster, and the URL helpers every message about a webhook goes through.
#include "coordinator/notify/webhook_poster.h"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <memory>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"

namespace onset::coordinator {
namespace {

// The answer's body is read and dropped (a receiver says "ok" or a page of HTML); one that goes
// on past this is cut off rather than read to the timeout.
constexpr size_t kMaxResponseBytes = 64 * 1024;

struct CurlEasyDeleter {
  void operator()(CURL* curl) const { curl_easy_cleanup(curl); }
};
struct CurlListDeleter {
  void operator()(curl_slist* list) const { curl_slist_free_all(list); }
};

// The answer's body: counted, never kept.
struct Sink {
  size_t bytes = 0;
  bool cut = false;  // more than kMaxResponseBytes came
};

size_t DropBody(char* /*data*/, size_t size, size_t count, void* user) {
  Sink* sink = static_cast<Sink*>(user);
  sink->bytes += size * count;
  if (sink->bytes > kMaxResponseBytes) {
    sink->cut = true;
    return 0;  // aborts the transfer (CURLE_WRITE_ERROR); the status line is in already
  }
  return size * count;
}

// libcurl's global state, set up once before the first handle. Never cleaned up: other threads
// may still post while the process exits.
bool CurlReady() {
  static const bool ready = curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK;
  return ready;
}

// The HTTP answer `code` as a status: OK for 2xx, Unavailable when a later try may pass.
absl::Status FromHttpCode(long code, const std::string& where) {
  if (code >= 200 && code < 300) return absl::OkStatus();
  const std::string message = absl::StrCat(where, ": HTTP ", code);
  if (code >= 500 || code == 408 || code == 429) return absl::UnavailableError(message);
  if (code >= 300 && code < 400) {
    return absl::FailedPreconditionError(message + " (redirects are not followed)");
  }
  return absl::FailedPreconditionError(message);
}

class CurlPoster final : public WebhookPoster {
 public:
  absl::Status Post(const std::string& url, const std::string& json_body,
                    std::chrono::milliseconds timeout) override {
    const std::string where = "POST " + RedactedUrl(url);
    if (absl::Status valid = CheckWebhookUrl(url); !valid.ok()) return valid;
    if (!CurlReady()) return absl::InternalError(where + ": libcurl did not initialise");
    std::unique_ptr<CURL, CurlEasyDeleter> curl(curl_easy_init());
    curl_slist* list = nullptr;
    for (const char* header : {"Content-Type: application/json",
                               // No "100 Continue" round trip before a body over 1 KiB.
                               "Expect:"}) {
      curl_slist* appended = curl_slist_append(list, header);
      if (appended == nullptr) {
        curl_slist_free_all(list);
        list = nullptr;
        break;
      }
      list = appended;
    }
    std::unique_ptr<curl_slist, CurlListDeleter> headers(list);
    if (!curl || !headers) return absl::ResourceExhaustedError(where + ": out of memory");

    char error[CURL_ERROR_SIZE] = {0};
    Sink sink;
    const long timeout_ms = static_cast<long>(std::max<int64_t>(1, timeout.count()));
    CURL* c = curl.get();
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, error);
    curl_easy_setopt(c, CURLOPT_URL, url.c_str());
#if LIBCURL_VERSION_NUM >= 0x075500  // 7.85: CURLOPT_PROTOCOLS is deprecated
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
#else
    curl_easy_setopt(c, CURLOPT_PROTOCOLS, long{CURLPROTO_HTTP | CURLPROTO_HTTPS});
#endif
    curl_easy_setopt(c, CURLOPT_POST, 1L);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, json_body.data());
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(json_body.size()));
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers.get());
    curl_easy_setopt(c, CURLOPT_USERAGENT, "onsetd");
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
    // Posters run on threads of their own: no SIGALRM for resolver timeouts.
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    // A redirect would re-send the body somewhere the operator did not name.
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 1L);
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 2L);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, &DropBody);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &sink);

    const CURLcode result = curl_easy_perform(c);
    long code = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
    if (result == CURLE_OK || (result == CURLE_WRITE_ERROR && sink.cut && code != 0)) {
      return FromHttpCode(code, where);
    }
    // curl's own words, with the URL (should a message quote it) cut down as everywhere else.
    std::string message = error[0] != '\0' ? std::string(error) : curl_easy_strerror(result);
    message = absl::StrReplaceAll(message, {{url, RedactedUrl(url)}});
    if (result == CURLE_URL_MALFORMAT || result == CURLE_UNSUPPORTED_PROTOCOL) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": ", message));
    }
    return absl::UnavailableError(absl::StrCat(where, ": ", message));
  }
};

// The parts of a URL up to its path: scheme and authority, or false when there is no
// "scheme://".
bool SplitUrl(const std::string& url, std::string* scheme, std::string* host, size_t* rest) {
  const size_t colon = url.find("://");
  if (colon == std::string::npos || colon == 0) return false;
  *scheme = url.substr(0, colon);
  if (!std::all_of(scheme->begin(), scheme->end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '+' || c == '-' || c == '.';
      })) {
    return false;
  }
  const size_t begin = colon + 3;
  *rest = url.find_first_of("/?#", begin);
  std::string authority = url.substr(begin, *rest == std::string::npos ? *rest : *rest - begin);
  // user:password@host: the credentials are left out too.
  const size_t at = authority.rfind('@');
  *host = at == std::string::npos ? authority : authority.substr(at + 1);
  return true;
}

}  // namespace

std::unique_ptr<WebhookPoster> NewCurlPoster() {
  CurlReady();
  return std::make_unique<CurlPoster>();
}

std::string RedactedUrl(const std::string& url) {
  std::string scheme, host;
  size_t rest = 0;
  if (!SplitUrl(url, &scheme, &host, &rest)) return "(not a URL)";
  std::string out = absl::StrCat(scheme, "://", host);
  if (rest != std::string::npos) out += url.compare(rest, std::string::npos, "/") == 0 ? "/" : "/…";
  return out;
}

absl::Status CheckWebhookUrl(const std::string& url) {
  std::string scheme, host;
  size_t rest = 0;
  const bool split = SplitUrl(url, &scheme, &host, &rest);
  const std::string lower = absl::AsciiStrToLower(scheme);
  if (!split || (lower != "http" && lower != "https")) {
    return absl::InvalidArgumentError(
        absl::StrCat("webhook URL ", RedactedUrl(url), ": not an http:// or https:// URL"));
  }
  const bool spaces = std::any_of(url.begin(), url.end(), [](char c) {
    return std::iscntrl(static_cast<unsigned char>(c)) || c == ' ';
  });
  if (host.empty() || host.front() == ':' || spaces) {
    return absl::InvalidArgumentError(
        absl::StrCat("webhook URL ", RedactedUrl(url), ": no host, or spaces in it"));
  }
  return absl::OkStatus();
}

}  // namespace onset::coordinator
