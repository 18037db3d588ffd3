#include "coordinator/mirror/json_http.h"

#include <curl/curl.h>

#include <algorithm>
#include <mutex>
#include <utility>

#include "absl/strings/str_cat.h"

namespace onset::coordinator {
namespace {

constexpr size_t kMaxAnswerBytes = 16 << 20;

bool CurlReady() {
  static const bool ready = curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK;
  return ready;
}

struct Answer {
  std::string body;
  bool cut = false;
};

size_t Collect(char* data, size_t size, size_t n, void* user) {
  auto* answer = static_cast<Answer*>(user);
  if (answer->body.size() + size * n > kMaxAnswerBytes) {
    answer->cut = true;
    return 0;  // ends the transfer: CURLE_WRITE_ERROR
  }
  answer->body.append(data, size * n);
  return size * n;
}

struct EasyDeleter {
  void operator()(CURL* c) const { curl_easy_cleanup(c); }
};
struct ListDeleter {
  void operator()(curl_slist* l) const { curl_slist_free_all(l); }
};

class CurlJsonHttp final : public JsonHttp {
 public:
  CurlJsonHttp(std::string base, std::string token, std::chrono::milliseconds timeout)
      : base_(std::move(base)), token_(std::move(token)), timeout_(timeout) {
    while (!base_.empty() && base_.back() == '/') base_.pop_back();
  }

  absl::StatusOr<nlohmann::json> Call(const std::string& path,
                                      const nlohmann::json& body) override {
    const bool post = !body.is_null();
    const std::string where =
        absl::StrCat(post ? "POST " : "GET ", base_, path.substr(0, path.find('?')));
    if (!CurlReady()) return absl::InternalError(where + ": libcurl did not initialise");
    std::unique_ptr<CURL, EasyDeleter> curl(curl_easy_init());
    curl_slist* list = curl_slist_append(nullptr, "Content-Type: application/json");
    if (list != nullptr) list = curl_slist_append(list, "Expect:");
    if (list != nullptr && !token_.empty()) {
      list = curl_slist_append(list, ("Authorization: Bearer " + token_).c_str());
    }
    std::unique_ptr<curl_slist, ListDeleter> headers(list);
    if (!curl || !headers) return absl::ResourceExhaustedError(where + ": out of memory");
    const std::string url = base_ + path;
    const std::string sent =
        post ? body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) : std::string();
    char error[CURL_ERROR_SIZE] = {0};
    Answer answer;
    const long timeout_ms = static_cast<long>(std::max<int64_t>(1, timeout_.count()));
    CURL* c = curl.get();
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, error);
    curl_easy_setopt(c, CURLOPT_URL, url.c_str());
#if LIBCURL_VERSION_NUM >= 0x075500  // 7.85: CURLOPT_PROTOCOLS is deprecated
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
#else
    curl_easy_setopt(c, CURLOPT_PROTOCOLS, long{CURLPROTO_HTTP | CURLPROTO_HTTPS});
#endif
    if (post) {
      curl_easy_setopt(c, CURLOPT_POST, 1L);
      curl_easy_setopt(c, CURLOPT_POSTFIELDS, sent.data());
      curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(sent.size()));
    }
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers.get());
    curl_easy_setopt(c, CURLOPT_USERAGENT, "onsetd");
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);        // a thread of its own: no SIGALRM
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);  // never the token to another host
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 1L);
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 2L);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, &Collect);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &answer);

    const CURLcode result = curl_easy_perform(c);
    long code = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
    if (answer.cut) {
      return absl::FailedPreconditionError(
          absl::StrCat(where, ": an answer of more than ", kMaxAnswerBytes, " bytes"));
    }
    if (result != CURLE_OK) {
      return absl::UnavailableError(
          absl::StrCat(where, ": ", error[0] != '\0' ? error : curl_easy_strerror(result)));
    }
    nlohmann::json parsed = nlohmann::json::parse(answer.body, nullptr, false);
    if (code >= 200 && code < 300) {
      if (parsed.is_discarded()) {
        return absl::FailedPreconditionError(where + ": the answer is not JSON");
      }
      return parsed;
    }
    std::string said;
    std::string error_code;
    if (!parsed.is_discarded() && parsed.is_object()) {
      said = parsed.value("message", "");
      error_code = parsed.value("error_code", "");
    }
    const std::string message =
        absl::StrCat(where, ": HTTP ", code, error_code.empty() ? "" : " " + error_code,
                     said.empty() ? "" : ": " + said.substr(0, 500));
    if (code >= 500 || code == 408 || code == 429) return absl::UnavailableError(message);
    if (code == 404 || error_code == "RESOURCE_DOES_NOT_EXIST") {
      return absl::NotFoundError(message);
    }
    if (error_code == "RESOURCE_ALREADY_EXISTS") return absl::AlreadyExistsError(message);
    return absl::FailedPreconditionError(message);
  }

 private:
  std::string base_;
  const std::string token_;
  const std::chrono::milliseconds timeout_;
};

}  // namespace

absl::Status CheckBaseUrl(const std::string& base) {
  size_t start = 0;
  if (base.rfind("http://", 0) == 0) {
    start = 7;
  } else if (base.rfind("https://", 0) == 0) {
    start = 8;
  } else {
    return absl::InvalidArgumentError("must start with http:// or https://");
  }
  const size_t end = base.find('/', start);
  const std::string authority = base.substr(start, end == std::string::npos ? end : end - start);
  if (authority.empty() || authority.front() == ':') {
    return absl::InvalidArgumentError("names no host");
  }
  if (authority.find('@') != std::string::npos) {
    return absl::InvalidArgumentError(
        "holds user info: a password on the command line is every local user's to read; put a "
        "token in MLFLOW_TRACKING_TOKEN instead");
  }
  if (base.find_first_of("?#") != std::string::npos) {
    return absl::InvalidArgumentError("has a query or fragment: give the server's base URL");
  }
  return absl::OkStatus();
}

std::unique_ptr<JsonHttp> NewCurlJsonHttp(std::string base, std::string token,
                                          std::chrono::milliseconds timeout) {
  return std::make_unique<CurlJsonHttp>(std::move(base), std::move(token), timeout);
}

}  // namespace onset::coordinator
