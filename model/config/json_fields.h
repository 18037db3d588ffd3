// Reading typed fields out of one JSON object, with errors that name the key's dotted path
// ("train.lr: must be between 0.0 and 10.0"), ranges, token counts ("250K") and unknown keys
// ("train.lrr: unknown key (did you mean train.lr?)"). Generic: the cell config (cell_config.h)
// lists its fields with it, but it knows none of them. Depends on nlohmann::json only.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace onset::model {

// A problem with one field: `path` is the dotted key ("train.lr"), empty for the whole config.
struct FieldError {
  std::string path;
  std::string message;
  std::string ToString() const { return path.empty() ? message : path + ": " + message; }
};

// "250K" -> 250000, "1.5M" -> 1500000, "2B" -> 2000000000, "1000" -> 1000. Suffixes are
// decimal (K = 1e3); underscores are ignored. Returns nullopt on anything else (negative,
// fractional tokens, junk).
std::optional<int64_t> ParseTokenCount(const std::string& text);

// Reads the fields of one JSON object (absent or null: every field keeps its value) whose
// dotted path is `prefix` ("train"). Records the first error only, into the error slot it is
// given, which several readers may share: once it holds an error, later reads still mark their
// keys as read but report nothing. A key that is absent or null leaves its field unchanged.
class JsonFieldReader {
 public:
  // `object` and `error` must outlive the reader. An object that is neither absent (null) nor
  // a mapping is an error ("train: must be a mapping").
  JsonFieldReader(const nlohmann::json& object, std::string prefix,
                  std::optional<FieldError>* error);
  JsonFieldReader(nlohmann::json&& object, std::string prefix,
                  std::optional<FieldError>* error) = delete;

  // Integers in [lo, hi]: "must be an integer", "must be between lo and hi".
  void Int(const char* key, int* out, int64_t lo, int64_t hi);
  void Int64(const char* key, int64_t* out, int64_t lo, int64_t hi);
  // A token count in [lo, hi]: an integer, an integral float, or a string ParseTokenCount reads.
  void Tokens(const char* key, int64_t* out, int64_t lo, int64_t hi);
  // A number in [lo, hi].
  void Double(const char* key, double* out, double lo, double hi);
  void Bool(const char* key, bool* out);
  void String(const char* key, std::string* out);
  // Lists whose every entry lies in [lo, hi]. Token lists come back sorted, without repeats.
  void IntList(const char* key, std::vector<int>* out, int lo, int hi);
  void DoubleList(const char* key, std::vector<double>* out, double lo, double hi);
  void TokensList(const char* key, std::vector<int64_t>* out, int64_t lo, int64_t hi);
  // A list of strings, each one of `allowed`.
  void StringList(const char* key, std::vector<std::string>* out,
                  const std::vector<std::string>& allowed);

  // The value of `key` (marked as read), or null when it is absent or null: for fields with a
  // shape of their own.
  const nlohmann::json* Find(const char* key);
  // Whether `key` is present and not null (does not mark it as read).
  bool Has(const char* key) const;

  // Records `message` about `key` (the object itself when empty), unless an error is recorded
  // already.
  void Fail(const std::string& key, const std::string& message);
  // Whether no error is recorded (by this reader or another sharing its slot).
  bool ok() const { return !error_->has_value(); }

  // Call after every field was read: any key no read asked for is unknown, with the closest
  // read key as a suggestion.
  void RejectUnknown();
  // The keys read so far, sorted.
  const std::set<std::string>& read_keys() const { return read_; }

 private:
  const nlohmann::json& object_;
  std::string prefix_;
  std::optional<FieldError>* error_;
  std::set<std::string> read_;
};

// How a field is read, for lists of fields that name each field's key and kind once
// (cell_config.cc): each kind calls the reader's method of its type with its range.
struct IntIn {  // an integer in [lo, hi]
  int64_t lo, hi;
  void operator()(JsonFieldReader& r, const char* key, int* out) const { r.Int(key, out, lo, hi); }
  void operator()(JsonFieldReader& r, const char* key, int64_t* out) const {
    r.Int64(key, out, lo, hi);
  }
};
struct TokensIn {  // a token count in [lo, hi]
  int64_t lo, hi;
  void operator()(JsonFieldReader& r, const char* key, int64_t* out) const {
    r.Tokens(key, out, lo, hi);
  }
};
struct NumberIn {  // a number in [lo, hi]
  double lo, hi;
  void operator()(JsonFieldReader& r, const char* key, double* out) const {
    r.Double(key, out, lo, hi);
  }
};
struct AnyBool {
  void operator()(JsonFieldReader& r, const char* key, bool* out) const { r.Bool(key, out); }
};
struct AnyString {
  void operator()(JsonFieldReader& r, const char* key, std::string* out) const {
    r.String(key, out);
  }
};
struct IntsIn {  // a list of integers in [lo, hi]
  int lo, hi;
  void operator()(JsonFieldReader& r, const char* key, std::vector<int>* out) const {
    r.IntList(key, out, lo, hi);
  }
};
struct NumbersIn {  // a list of numbers in [lo, hi]
  double lo, hi;
  void operator()(JsonFieldReader& r, const char* key, std::vector<double>* out) const {
    r.DoubleList(key, out, lo, hi);
  }
};
struct TokenCountsIn {  // a list of token counts in [lo, hi], sorted, without repeats
  int64_t lo, hi;
  void operator()(JsonFieldReader& r, const char* key, std::vector<int64_t>* out) const {
    r.TokensList(key, out, lo, hi);
  }
};
struct StringsOf {  // a list of strings out of `allowed`
  std::vector<std::string> allowed;
  void operator()(JsonFieldReader& r, const char* key, std::vector<std::string>* out) const {
    r.StringList(key, out, allowed);
  }
};

// The member `key` of `object`, or null when `object` is not an object or has no such member.
const nlohmann::json& MemberOrNull(const nlohmann::json& object, const char* key);

// The first place where two JSON documents differ: its dotted path ("train.lr") and the value
// each has there, as JSON text ("nothing" where one has none). Nullopt when they are equal.
struct JsonDifference {
  std::string path;
  std::string a;
  std::string b;
};
std::optional<JsonDifference> FirstDifference(const nlohmann::json& a, const nlohmann::json& b);

}  // namespace onset::model
