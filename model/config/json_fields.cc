#include "model/config/json_fields.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <utility>

#include "base/did_you_mean.h"

namespace onset::model {
namespace {

using nlohmann::json;

// A token count as written ("250K", "1.5M", "2000"), scaled, before any range or integrality
// check (huge ones are +inf); nullopt when it is not one.
std::optional<double> TokenCountValue(const std::string& text) {
  if (text.empty()) return std::nullopt;
  std::string digits = text;
  double scale = 1;
  char last = static_cast<char>(std::toupper(static_cast<unsigned char>(text.back())));
  if (last == 'K' || last == 'M' || last == 'B') {
    scale = last == 'K' ? 1e3 : last == 'M' ? 1e6 : 1e9;
    digits.pop_back();
  }
  int dots = 0;
  std::string clean;
  for (char c : digits) {
    if (c == '.') {
      ++dots;
    } else if (!std::isdigit(static_cast<unsigned char>(c)) && c != '_') {
      return std::nullopt;
    }
    if (c != '_') clean += c;
  }
  if (dots > 1 || clean.empty() || clean == ".") return std::nullopt;
  // strtod, not stod: a 400-digit count is +inf here, not an exception.
  return std::strtod(clean.c_str(), nullptr) * scale;
}

// "1e15" for a power of ten, else the number.
std::string Short(int64_t x) {
  int exponent = 0;
  for (int64_t v = x; v >= 10 && v % 10 == 0; v /= 10) ++exponent;
  if (exponent >= 3 && x == static_cast<int64_t>(std::pow(10.0, exponent))) {
    return "1e" + std::to_string(exponent);
  }
  return std::to_string(x);
}

std::string Num(int x) { return std::to_string(x); }
std::string Num(int64_t x) { return std::to_string(x); }
std::string Num(double x) { return json(x).dump(); }

template <typename T>
std::string Range(T lo, T hi) {
  return "must be between " + Num(lo) + " and " + Num(hi);
}

}  // namespace

std::optional<int64_t> ParseTokenCount(const std::string& text) {
  std::optional<double> value = TokenCountValue(text);
  if (!value || !(*value <= 9e18) || *value != std::floor(*value)) return std::nullopt;
  return static_cast<int64_t>(*value);
}

const json& MemberOrNull(const json& object, const char* key) {
  static const json kNull;
  if (!object.is_object()) return kNull;
  auto it = object.find(key);
  return it == object.end() ? kNull : *it;
}

JsonFieldReader::JsonFieldReader(const json& object, std::string prefix,
                                 std::optional<FieldError>* error)
    : object_(object), prefix_(std::move(prefix)), error_(error) {
  if (!object_.is_null() && !object_.is_object()) Fail("", "must be a mapping");
}

void JsonFieldReader::Int(const char* key, int* out, int64_t lo, int64_t hi) {
  int64_t v = *out;
  Int64(key, &v, lo, hi);
  *out = static_cast<int>(v);
}

void JsonFieldReader::Int64(const char* key, int64_t* out, int64_t lo, int64_t hi) {
  const json* v = Find(key);
  if (!v) return;
  if (!v->is_number_integer()) return Fail(key, "must be an integer");
  int64_t x = v->get<int64_t>();
  if (x < lo || x > hi) return Fail(key, Range(lo, hi));
  *out = x;
}

void JsonFieldReader::Tokens(const char* key, int64_t* out, int64_t lo, int64_t hi) {
  const json* v = Find(key);
  if (!v) return;
  std::optional<int64_t> x;
  bool too_large = false;
  if (v->is_number_unsigned()) {
    too_large = v->get<uint64_t>() > static_cast<uint64_t>(hi);
    if (!too_large) x = static_cast<int64_t>(v->get<uint64_t>());
  } else if (v->is_number_integer()) {
    x = v->get<int64_t>();
  } else if (v->is_string()) {
    x = ParseTokenCount(v->get<std::string>());
    std::optional<double> d = TokenCountValue(v->get<std::string>());
    too_large = !x && d && *d > static_cast<double>(hi);
  } else if (v->is_number_float()) {
    double d = v->get<double>();
    too_large = d > static_cast<double>(hi);
    if (d >= 0 && d == std::floor(d) && !too_large) x = static_cast<int64_t>(d);
  }
  if (too_large || (x && *x > hi)) {
    return Fail(key, "must be at most " + std::to_string(hi) + " tokens (" + Short(hi) + ")");
  }
  if (!x) return Fail(key, "must be a token count like 250000, 250K, 1.5M or 2B");
  if (*x < lo) return Fail(key, "must be at least " + std::to_string(lo));
  *out = *x;
}

void JsonFieldReader::Double(const char* key, double* out, double lo, double hi) {
  const json* v = Find(key);
  if (!v) return;
  if (!v->is_number()) return Fail(key, "must be a number");
  double x = v->get<double>();
  if (!(x >= lo && x <= hi)) return Fail(key, Range(lo, hi));
  *out = x;
}

void JsonFieldReader::Bool(const char* key, bool* out) {
  const json* v = Find(key);
  if (!v) return;
  if (!v->is_boolean()) return Fail(key, "must be true or false");
  *out = v->get<bool>();
}

void JsonFieldReader::String(const char* key, std::string* out) {
  const json* v = Find(key);
  if (!v) return;
  if (!v->is_string()) return Fail(key, "must be a string");
  *out = v->get<std::string>();
}

void JsonFieldReader::IntList(const char* key, std::vector<int>* out, int lo, int hi) {
  const json* v = Find(key);
  if (!v) return;
  if (!v->is_array()) return Fail(key, "must be a list of integers");
  std::vector<int> xs;
  for (const json& e : *v) {
    if (!e.is_number_integer() || e.get<int64_t>() < lo || e.get<int64_t>() > hi) {
      return Fail(key, "every entry " + Range(lo, hi));
    }
    xs.push_back(e.get<int>());
  }
  *out = std::move(xs);
}

void JsonFieldReader::DoubleList(const char* key, std::vector<double>* out, double lo, double hi) {
  const json* v = Find(key);
  if (!v) return;
  if (!v->is_array()) return Fail(key, "must be a list of numbers");
  std::vector<double> xs;
  for (const json& e : *v) {
    if (!e.is_number() || !(e.get<double>() >= lo && e.get<double>() <= hi)) {
      return Fail(key, "every entry " + Range(lo, hi));
    }
    xs.push_back(e.get<double>());
  }
  *out = std::move(xs);
}

void JsonFieldReader::TokensList(const char* key, std::vector<int64_t>* out, int64_t lo,
                                 int64_t hi) {
  const json* v = Find(key);
  if (!v) return;
  if (!v->is_array()) return Fail(key, "must be a list of token counts");
  std::vector<int64_t> xs;
  for (const json& e : *v) {
    std::optional<int64_t> x;
    if (e.is_number_integer()) x = e.get<int64_t>();
    if (e.is_string()) x = ParseTokenCount(e.get<std::string>());
    if (!x || *x < lo || *x > hi) {
      return Fail(key, "every entry must be a token count between " + std::to_string(lo) + " and " +
                           std::to_string(hi));
    }
    xs.push_back(*x);
  }
  std::sort(xs.begin(), xs.end());
  xs.erase(std::unique(xs.begin(), xs.end()), xs.end());
  *out = std::move(xs);
}

void JsonFieldReader::StringList(const char* key, std::vector<std::string>* out,
                                 const std::vector<std::string>& allowed) {
  const json* v = Find(key);
  if (!v) return;
  std::string names;
  for (const std::string& a : allowed) names += (names.empty() ? "" : ", ") + a;
  if (!v->is_array()) return Fail(key, "must be a list of strings out of " + names);
  std::vector<std::string> xs;
  for (const json& e : *v) {
    if (!e.is_string() ||
        std::find(allowed.begin(), allowed.end(), e.get<std::string>()) == allowed.end()) {
      return Fail(key, "every entry must be one of " + names);
    }
    xs.push_back(e.get<std::string>());
  }
  *out = std::move(xs);
}

const json* JsonFieldReader::Find(const char* key) {
  read_.insert(key);
  if (!object_.is_object()) return nullptr;
  auto it = object_.find(key);
  if (it == object_.end() || it->is_null()) return nullptr;
  return &*it;
}

bool JsonFieldReader::Has(const char* key) const {
  if (!object_.is_object()) return false;
  auto it = object_.find(key);
  return it != object_.end() && !it->is_null();
}

void JsonFieldReader::Fail(const std::string& key, const std::string& message) {
  if (*error_) return;
  std::string path = prefix_;
  if (!key.empty()) path += (path.empty() ? "" : ".") + key;
  *error_ = FieldError{path, message};
}

void JsonFieldReader::RejectUnknown() {
  if (!object_.is_object()) return;
  for (const auto& [key, value] : object_.items()) {
    if (read_.count(key)) continue;
    std::optional<std::string> near = base::ClosestMatch(key, {read_.begin(), read_.end()});
    Fail(key, near ? "unknown key (did you mean " + prefix_ + "." + *near + "?)" : "unknown key");
  }
}

std::optional<JsonDifference> FirstDifference(const nlohmann::json& a, const nlohmann::json& b) {
  if (a == b) return std::nullopt;
  const nlohmann::json patch = nlohmann::json::diff(a, b);
  if (patch.empty()) return std::nullopt;
  const std::string pointer = patch[0].value("path", "");
  const nlohmann::json::json_pointer ptr(pointer);
  JsonDifference d;
  d.path = pointer;
  std::replace(d.path.begin(), d.path.end(), '/', '.');
  if (!d.path.empty() && d.path[0] == '.') d.path.erase(0, 1);
  d.a = a.contains(ptr) ? a.at(ptr).dump() : "nothing";
  d.b = b.contains(ptr) ? b.at(ptr).dump() : "nothing";
  return d;
}

}  // namespace onset::model
