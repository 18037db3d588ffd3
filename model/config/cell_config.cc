#include "model/config/cell_config.h"

#include <algorithm>
#include <cstdlib>
#include <cctype>
#include <cmath>
#include <regex>
#include <set>

#include "base/did_you_mean.h"
#include "model/config/vocab.h"

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

// Reads the fields of one JSON object section; remembers the first error and rejects keys
// that no reader asked for.
class SectionReader {
 public:
  SectionReader(const json& j, std::string prefix, std::optional<FieldError>* error)
      : j_(j), prefix_(std::move(prefix)), error_(error) {
    if (!j_.is_null() && !j_.is_object()) Fail("", "must be a mapping");
  }

  void Int(const char* key, int* out, int64_t lo, int64_t hi) {
    int64_t v = *out;
    Int64(key, &v, lo, hi);
    *out = static_cast<int>(v);
  }

  void Int64(const char* key, int64_t* out, int64_t lo, int64_t hi) {
    const json* v = Find(key);
    if (!v) return;
    if (!v->is_number_integer()) return Fail(key, "must be an integer");
    int64_t x = v->get<int64_t>();
    if (x < lo || x > hi) return Fail(key, Range(lo, hi));
    *out = x;
  }

  void Tokens(const char* key, int64_t* out, int64_t lo, int64_t hi) {
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

  void Double(const char* key, double* out, double lo, double hi) {
    const json* v = Find(key);
    if (!v) return;
    if (!v->is_number()) return Fail(key, "must be a number");
    double x = v->get<double>();
    if (!(x >= lo && x <= hi)) return Fail(key, Range(lo, hi));
    *out = x;
  }

  void Bool(const char* key, bool* out) {
    const json* v = Find(key);
    if (!v) return;
    if (!v->is_boolean()) return Fail(key, "must be true or false");
    *out = v->get<bool>();
  }

  void String(const char* key, std::string* out) {
    const json* v = Find(key);
    if (!v) return;
    if (!v->is_string()) return Fail(key, "must be a string");
    *out = v->get<std::string>();
  }

  void IntList(const char* key, std::vector<int>* out, int lo, int hi) {
    const json* v = Find(key);
    if (!v) return;
    if (!v->is_array()) return Fail(key, "must be a list of integers");
    std::vector<int> xs;
    for (const json& e : *v) {
      if (!e.is_number_integer() || e.get<int64_t>() < lo || e.get<int64_t>() > hi)
        return Fail(key, "every entry " + Range(lo, hi));
      xs.push_back(e.get<int>());
    }
    *out = std::move(xs);
  }

  void DoubleList(const char* key, std::vector<double>* out, double lo, double hi) {
    const json* v = Find(key);
    if (!v) return;
    if (!v->is_array()) return Fail(key, "must be a list of numbers");
    std::vector<double> xs;
    for (const json& e : *v) {
      if (!e.is_number() || !(e.get<double>() >= lo && e.get<double>() <= hi))
        return Fail(key, "every entry " + Range(lo, hi));
      xs.push_back(e.get<double>());
    }
    *out = std::move(xs);
  }

  void TokensList(const char* key, std::vector<int64_t>* out, int64_t lo, int64_t hi) {
    const json* v = Find(key);
    if (!v) return;
    if (!v->is_array()) return Fail(key, "must be a list of token counts");
    std::vector<int64_t> xs;
    for (const json& e : *v) {
      std::optional<int64_t> x;
      if (e.is_number_integer()) x = e.get<int64_t>();
      if (e.is_string()) x = ParseTokenCount(e.get<std::string>());
      if (!x || *x < lo || *x > hi) {
        return Fail(key, "every entry must be a token count between " + std::to_string(lo) +
                             " and " + std::to_string(hi));
      }
      xs.push_back(*x);
    }
    std::sort(xs.begin(), xs.end());
    xs.erase(std::unique(xs.begin(), xs.end()), xs.end());
    *out = std::move(xs);
  }

  // Every entry must be one of `allowed`.
  void StringList(const char* key, std::vector<std::string>* out,
                  const std::vector<std::string>& allowed) {
    const json* v = Find(key);
    if (!v) return;
    std::string names;
    for (const std::string& a : allowed) names += (names.empty() ? "" : ", ") + a;
    if (!v->is_array()) return Fail(key, "must be a list of strings out of " + names);
    std::vector<std::string> xs;
    for (const json& e : *v) {
      if (!e.is_string() || std::find(allowed.begin(), allowed.end(), e.get<std::string>()) ==
                                allowed.end())
        return Fail(key, "every entry must be one of " + names);
      xs.push_back(e.get<std::string>());
    }
    *out = std::move(xs);
  }

  // Whether `key` is present (and not null).
  bool Has(const char* key) const {
    if (!j_.is_object()) return false;
    auto it = j_.find(key);
    return it != j_.end() && !it->is_null();
  }

  // Call after every field was read: any key left over is unknown.
  void RejectUnknown() {
    if (!j_.is_object()) return;
    for (const auto& [key, value] : j_.items()) {
      if (seen_.count(key)) continue;
      std::optional<std::string> near = base::ClosestMatch(key, {seen_.begin(), seen_.end()});
      Fail(key, near ? "unknown key (did you mean " + prefix_ + "." + *near + "?)"
                     : "unknown key");
    }
  }

  // The dotted paths of every key read so far.
  void AppendFields(std::vector<std::string>* out) const {
    for (const std::string& key : seen_) out->push_back(prefix_ + "." + key);
  }

  void Fail(const std::string& key, const std::string& message) {
    if (*error_) return;
    std::string path = prefix_;
    if (!key.empty()) path += (path.empty() ? "" : ".") + key;
    *error_ = FieldError{path, message};
  }

  // The value of `key` (marked as read), or null when absent: for fields with a shape of
  // their own.
  const json* Find(const char* key) {
    seen_.insert(key);
    if (!j_.is_object()) return nullptr;
    auto it = j_.find(key);
    if (it == j_.end() || it->is_null()) return nullptr;
    return &*it;
  }

 private:
  template <typename T>
  static std::string Range(T lo, T hi) {
    return "must be between " + Num(lo) + " and " + Num(hi);
  }
  static std::string Num(int x) { return std::to_string(x); }
  static std::string Num(int64_t x) { return std::to_string(x); }
  static std::string Num(double x) {
    json j = x;
    return j.dump();
  }

  const json& j_;
  std::string prefix_;
  std::optional<FieldError>* error_;
  std::set<std::string> seen_;
};

const json& Section(const json& j, const char* key) {
  static const json kNull;
  if (!j.is_object()) return kNull;
  auto it = j.find(key);
  return it == j.end() ? kNull : *it;
}

}  // namespace

int ModelConfig::resolved_mlp_hidden() const {
  if (mlp_hidden > 0) return mlp_hidden;
  int h = (8 * d_model + 2) / 3;
  return (h + 31) / 32 * 32;
}

bool ModelConfig::HasSliding() const { return pattern.find(kSlidingWindow) != std::string::npos; }

bool ModelConfig::HasAttention() const {
  return pattern.find_first_of(std::string{kFullAttention, kSlidingWindow}) != std::string::npos;
}

bool ModelConfig::HasLinear() const {
  return pattern.find_first_of(std::string{kLinearAttention, kGatedDeltaNet}) != std::string::npos;
}

bool ModelConfig::LayerUsesRope(int i) const {
  const char kind = pattern.at(i);
  if (kind != kFullAttention && kind != kSlidingWindow) return false;
  if (pos == kPosNope) return false;
  if (pos == kPosNopeFull) return kind != kFullAttention;
  if (pos == kPosRope) return true;
  // Explicit "F:nope,S:rope": find this layer's type.
  const std::string entry = std::string(1, kind) + ":";
  const size_t at = pos.find(entry);
  return at == std::string::npos || pos.compare(at + 2, 4, "nope") != 0;
}

bool ModelConfig::LayerUsesLogn(int i) const {
  const char kind = pattern.at(i);
  if (logn_scaling == kLognOff || LayerUsesRope(i)) return false;
  if (kind == kFullAttention) return true;
  return kind == kSlidingWindow && logn_scaling == kLognAll;
}

bool IsExplicitPos(const std::string& pos) {
  static const std::regex kExplicit("([FS]:(rope|nope))(,[FS]:(rope|nope))?");
  return std::regex_match(pos, kExplicit) && !(pos.size() > 6 && pos[0] == pos[7]);
}

int64_t TrainConfig::resolved_warmup_tokens() const {
  return warmup_tokens > 0 ? warmup_tokens : tokens / 20;
}

int64_t TrainConfig::resolved_checkpoint_every_tokens() const {
  return checkpoint_every_tokens > 0 ? checkpoint_every_tokens : std::max<int64_t>(1, tokens / 4);
}

int64_t TrainConfig::wsd_decay_start() const {
  return tokens - std::llround(decay_fraction * static_cast<double>(tokens));
}

int DataConfig::resolved_max_distance(int seq_len) const {
  return max_distance > 0 ? max_distance : seq_len;
}

int64_t EvalConfig::resolved_every_tokens(int64_t budget) const {
  return every_tokens > 0 ? every_tokens : std::max<int64_t>(1, budget / 4);
}

int64_t EvalConfig::resolved_log_start(int64_t budget) const {
  return log_start > 0 ? log_start : std::max<int64_t>(1, budget / 100);
}

int64_t EvalConfig::NextEvalAfter(int64_t tokens, int64_t budget) const {
  if (log_points <= 0) {
    const int64_t every = resolved_every_tokens(budget);
    return std::min(budget, (tokens / every + 1) * every);
  }
  const double lo = std::log(static_cast<double>(resolved_log_start(budget)));
  const double hi = std::log(static_cast<double>(budget));
  for (int i = 0; i < log_points; ++i) {
    const double f = log_points == 1 ? 1.0 : static_cast<double>(i) / (log_points - 1);
    const auto point = static_cast<int64_t>(std::llround(std::exp(lo + f * (hi - lo))));
    if (point > tokens) return std::min(point, budget);
  }
  return budget;
}

std::vector<int> EvalConfig::resolved_niah_lengths(int seq_len) const {
  if (!niah_lengths.empty()) return niah_lengths;
  return {seq_len / 2, seq_len, 2 * seq_len};
}

int DataConfig::resolved_key_alphabet() const {
  const int values = std::min(text_tokens(), 256);
  return key_alphabet > 0 ? std::min(key_alphabet, values) : values;
}

int MinNiahLength(const DataConfig& data, int records) {
  const int span = data.record_len();
  return 1 + span + (records > 1 ? (records + 1) * span - 2 : 0) + 1 + data.question_len();
}

int EvalConfig::resolved_short_context(const ModelConfig& model) const {
  int context = short_context;
  if (context <= 0) context = model.HasSliding() ? model.window : model.seq_len / 4;
  return std::clamp(context, 2, model.seq_len);
}

int EvalConfig::resolved_niah_window(const ModelConfig& model) const {
  if (niah_window > 0) return niah_window;
  return model.HasSliding() ? model.window : std::max(1, model.seq_len / 4);
}

std::optional<int64_t> ParseTokenCount(const std::string& text) {
  std::optional<double> value = TokenCountValue(text);
  if (!value || !(*value <= 9e18) || *value != std::floor(*value)) return std::nullopt;
  return static_cast<int64_t>(*value);
}

namespace {

// The ratio archs: name -> the efficient layer they repeat.
struct RatioArch {
  const char* name;
  char letter;
};
constexpr RatioArch kRatioArchs[] = {
    {"swa", kSlidingWindow}, {"lightning", kLinearAttention}, {"gdn", kGatedDeltaNet}};

// Parses "name" or "name:R" of a ratio arch into its letter and ratio; false when `arch` is not
// a ratio arch. `error` is set when it is one but R is malformed.
bool ParseRatioArch(const std::string& arch, char* letter, int* ratio,
                    std::optional<std::string>* error) {
  for (const RatioArch& r : kRatioArchs) {
    const std::string name = r.name;
    if (arch != name && arch.rfind(name + ":", 0) != 0) continue;
    *letter = r.letter;
    *ratio = 3;
    if (arch.size() > name.size()) {
      const std::string digits = arch.substr(name.size() + 1);
      if (digits.empty() || digits.size() > 3 ||
          digits.find_first_not_of("0123456789") != std::string::npos) {
        *error = "ratio in '" + arch + "' must be a non-negative integer, e.g. " + name +
                 ":3 (" + name + ":0 = no full-attention layer)";
        return true;
      }
      *ratio = std::stoi(digits);
    }
    return true;
  }
  return false;
}

bool IsLayerLetter(char c) {
  return c == kFullAttention || c == kSlidingWindow || c == kLinearAttention ||
         c == kGatedDeltaNet;
}

}  // namespace

bool ArchUsesFullPosition(const std::string& arch) {
  char letter = 0;
  int ratio = 0;
  std::optional<std::string> error;
  return ParseRatioArch(arch, &letter, &ratio, &error) && !error && ratio >= 1;
}

std::optional<std::string> ResolvePattern(const std::string& arch, int layers,
                                          std::string* pattern,
                                          const std::string& full_position) {
  if (full_position != kFullLast && full_position != kFullFirst) {
    return "unknown full_position '" + full_position + "': expected last or first";
  }
  std::string unit;
  char letter = 0;
  int ratio = 0;
  std::optional<std::string> ratio_error;
  if (arch == "full") {
    unit = "F";
  } else if (ParseRatioArch(arch, &letter, &ratio, &ratio_error)) {
    if (ratio_error) return ratio_error;
    unit = std::string(ratio, letter);
    if (ratio == 0) {
      unit = std::string(1, letter);
    } else if (full_position == kFullFirst) {
      unit.insert(unit.begin(), kFullAttention);
    } else {
      unit += kFullAttention;
    }
  } else {
    if (arch.empty()) return std::string("arch must not be empty");
    for (char c : arch) {
      if (!IsLayerLetter(c)) {
        return "unknown arch '" + arch +
               "': expected full, swa[:R], lightning[:R], gdn[:R] or a pattern of F/S/L/D "
               "letters such as SSSF";
      }
    }
    unit = arch;
  }
  if (layers % static_cast<int>(unit.size()) != 0) {
    return "arch '" + arch + "' repeats a group of " + std::to_string(unit.size()) +
           " layers, which does not divide model.layers = " + std::to_string(layers);
  }
  pattern->clear();
  for (int i = 0; i < layers / static_cast<int>(unit.size()); ++i) *pattern += unit;
  return std::nullopt;
}

namespace {

// ParseCellConfig; `fields`, when given, receives the dotted path of every key the sections
// read.
std::optional<FieldError> Parse(const json& j, CellConfig* out, std::vector<std::string>* fields) {
  std::optional<FieldError> error;
  CellConfig c;
  if (!j.is_object()) return FieldError{"", "cell config must be a JSON object"};

  if (auto it = j.find("study"); it != j.end() && !it->is_null()) {
    if (!it->is_string()) return FieldError{"study", "must be a string"};
    c.study = it->get<std::string>();
  }

  SectionReader m(Section(j, "model"), "model", &error);
  ModelConfig& mc = c.model;
  m.Int("layers", &mc.layers, 1, 256);
  m.Int("d_model", &mc.d_model, 8, 65536);
  m.Int("heads", &mc.heads, 1, 1024);
  m.Int("mlp_hidden", &mc.mlp_hidden, 0, 1 << 20);
  m.Int("seq_len", &mc.seq_len, 8, 1 << 22);
  m.Double("rope_base", &mc.rope_base, 1.0, 1e12);
  m.Bool("tie_embeddings", &mc.tie_embeddings);
  m.Bool("qk_norm", &mc.qk_norm);
  m.Double("init_std", &mc.init_std, 1e-6, 1.0);
  m.String("arch", &mc.arch);
  std::string written_pattern;
  m.String("pattern", &written_pattern);
  m.String("full_position", &mc.full_position);
  m.Int("window", &mc.window, 0, 1 << 22);
  m.String("pos", &mc.pos);
  if (const json* logn = m.Find("logn_scaling")) {
    if (logn->is_boolean()) {
      mc.logn_scaling = logn->get<bool>() ? kLognFull : kLognOff;
    } else if (logn->is_string() && (*logn == kLognOff || *logn == kLognFull || *logn == kLognAll)) {
      mc.logn_scaling = logn->get<std::string>();
    } else {
      m.Fail("logn_scaling", "must be off, full (NoPE F layers), all (NoPE F and S layers), "
                             "true (= full) or false");
    }
  }
  m.Int("chunk_size", &mc.chunk_size, 1, 1 << 16);
  m.Int("kv_heads", &mc.kv_heads, 0, 1024);
  m.RejectUnknown();
  if (fields) m.AppendFields(fields);
  if (!error && mc.d_model % mc.heads != 0) m.Fail("heads", "must divide d_model");
  if (!error && mc.head_dim() % 2 != 0) m.Fail("heads", "d_model / heads must be even (RoPE)");
  if (!error && mc.heads % mc.resolved_kv_heads() != 0) {
    m.Fail("kv_heads", "must divide model.heads = " + std::to_string(mc.heads) + " (0 = heads)");
  }
  if (!error && mc.full_position != kFullLast && mc.full_position != kFullFirst) {
    m.Fail("full_position",
           "unknown full_position '" + mc.full_position + "': expected last or first");
  }
  if (!error) {
    if (auto e = ResolvePattern(mc.arch, mc.layers, &mc.pattern, mc.full_position)) {
      m.Fail("arch", *e);
    }
  }
  if (!error) {
    // Values that cannot change the model are canonicalised, so they never split cells.
    if (!ArchUsesFullPosition(mc.arch)) mc.full_position = kFullLast;
    if (!mc.HasLinear()) mc.chunk_size = ModelConfig().chunk_size;
    mc.kv_heads = mc.HasAttention() ? mc.resolved_kv_heads() : mc.heads;
  }
  if (!error && !written_pattern.empty() && written_pattern != mc.pattern) {
    m.Fail("pattern", "'" + written_pattern + "' disagrees with arch '" + mc.arch +
                          "' (resolved to '" + mc.pattern + "'); leave it out");
  }
  if (!error && mc.pos != kPosRope && mc.pos != kPosNopeFull && mc.pos != kPosNope &&
      !IsExplicitPos(mc.pos)) {
    m.Fail("pos", "unknown positional scheme '" + mc.pos +
                      "': expected rope, nope-full, nope or a per-type form like F:nope,S:rope");
  }
  if (!error) {
    // Schemes that place RoPE in the same layers are one model: full attention with nope-full
    // is nope, a pattern without F layers with nope-full is rope, L/D-only patterns are rope.
    // The first of rope, nope, nope-full that matches names the cell.
    auto rope_layers = [&mc](const char* pos) {
      ModelConfig probe = mc;
      probe.pos = pos;
      std::vector<bool> flags;
      for (int i = 0; i < probe.layers; ++i) flags.push_back(probe.LayerUsesRope(i));
      return flags;
    };
    const std::vector<bool> wanted = rope_layers(mc.pos.c_str());
    for (const char* pos : {kPosRope, kPosNope, kPosNopeFull, "F:rope,S:nope"}) {
      if (rope_layers(pos) == wanted) {
        mc.pos = pos;
        break;
      }
    }
    // Log-n scaling that names no layer of this model is off. "all" that touches only F
    // layers is "full": the same model.
    bool any = false, any_sliding = false;
    for (int i = 0; i < mc.layers; ++i) {
      any |= mc.LayerUsesLogn(i);
      any_sliding |= mc.LayerUsesLogn(i) && mc.pattern[i] == kSlidingWindow;
    }
    if (!any) mc.logn_scaling = kLognOff;
    if (any && !any_sliding) mc.logn_scaling = kLognFull;
  }
  if (!error) {
    if (mc.HasSliding()) {
      if (mc.window < 1) m.Fail("window", "is required (>= 1) for an arch with S layers");
    } else {
      mc.window = 0;  // a window means nothing without S layers; keeps the hash free of it
    }
  }

  SectionReader t(Section(j, "train"), "train", &error);
  TrainConfig& tc = c.train;
  t.Tokens("tokens", &tc.tokens, 1, kMaxTrainTokens);
  t.Tokens("batch_tokens", &tc.batch_tokens, 1, kMaxBatchTokens);
  t.Int("micro_batch", &tc.micro_batch, 1, 1 << 16);
  t.Double("lr", &tc.lr, 0.0, 10.0);
  t.Double("min_lr_ratio", &tc.min_lr_ratio, 0.0, 1.0);
  t.Tokens("warmup_tokens", &tc.warmup_tokens, 0, kMaxTrainTokens);
  t.String("schedule", &tc.schedule);
  t.Double("decay_fraction", &tc.decay_fraction, 0.0, 1.0);
  t.String("decay_shape", &tc.decay_shape);
  t.Double("weight_decay", &tc.weight_decay, 0.0, 10.0);
  t.Double("beta1", &tc.beta1, 0.0, 0.999999);
  t.Double("beta2", &tc.beta2, 0.0, 0.999999);
  t.Double("grad_clip", &tc.grad_clip, 0.0, 1e6);
  t.Int64("seed", &tc.seed, 0, int64_t{1} << 53);
  t.String("precision", &tc.precision);
  t.Int("log_every_steps", &tc.log_every_steps, 1, 1 << 20);
  t.Int("threads", &tc.threads, 0, 1024);
  t.Tokens("checkpoint_every_tokens", &tc.checkpoint_every_tokens, 0, kMaxTrainTokens);
  t.Int("keep_checkpoints", &tc.keep_checkpoints, 1, 1 << 20);
  t.TokensList("keep_checkpoints_at", &tc.keep_checkpoints_at, 1, tc.tokens);
  t.RejectUnknown();
  if (fields) t.AppendFields(fields);
  if (!error && !(tc.lr > 0)) {
    t.Fail("lr", "must be above 0: a zero learning rate trains nothing");
  }
  if (!error && tc.batch_tokens < mc.seq_len) {
    t.Fail("batch_tokens", "must be at least model.seq_len = " + std::to_string(mc.seq_len));
  }
  if (!error && tc.resolved_warmup_tokens() >= tc.tokens) {
    t.Fail("warmup_tokens", "must be smaller than train.tokens");
  }
  if (!error && tc.precision != "fp32" && tc.precision != "bf16") {
    t.Fail("precision", "unknown precision '" + tc.precision + "': expected fp32 or bf16");
  }
  if (!error && tc.schedule != "cosine" && tc.schedule != "wsd") {
    t.Fail("schedule", "unknown schedule '" + tc.schedule + "': expected cosine or wsd");
  }
  if (!error && tc.decay_shape != "linear" && tc.decay_shape != "cosine" &&
      tc.decay_shape != "sqrt") {
    t.Fail("decay_shape",
           "unknown shape '" + tc.decay_shape + "': expected linear, cosine or sqrt");
  }
  if (!error && tc.schedule == "wsd") {
    if (tc.wsd_decay_start() >= tc.tokens) {
      t.Fail("decay_fraction", "must leave at least one token of decay (> 0)");
    } else if (tc.resolved_warmup_tokens() > tc.wsd_decay_start()) {
      t.Fail("warmup_tokens", "must end before the decay starts at " +
                                  std::to_string(tc.wsd_decay_start()) + " tokens");
    }
  }
  if (!error && tc.schedule == "cosine") {
    const TrainConfig defaults;
    tc.decay_fraction = defaults.decay_fraction;
    tc.decay_shape = defaults.decay_shape;
  }

  SectionReader d(Section(j, "data"), "data", &error);
  DataConfig& dc = c.data;
  d.String("kind", &dc.kind);
  d.Int("markov_branching", &dc.markov_branching, 1, 256);
  d.Double("zipf_exponent", &dc.zipf_exponent, 0.0, 10.0);
  d.Double("records_per_seq", &dc.records_per_seq, 0.0, 1e6);
  d.Int("key_len", &dc.key_len, 1, 64);
  d.Int("value_len", &dc.value_len, 1, 64);
  d.Int("key_alphabet", &dc.key_alphabet, 0, 256);
  d.Bool("value_marker", &dc.value_marker);
  d.Bool("answer_marker", &dc.answer_marker);
  d.Double("absent_queries", &dc.absent_queries, 0.0, 1.0);
  d.Int("min_distance", &dc.min_distance, 1, 1 << 22);
  d.Int("max_distance", &dc.max_distance, 0, 1 << 22);
  d.Int64("seed", &dc.seed, 0, int64_t{1} << 53);
  d.String("background", &dc.background);
  d.String("path", &dc.path);
  d.String("dtype", &dc.dtype);
  d.Int("vocab_size", &dc.vocab_size, 1, (1 << 30));
  d.String("heldout_path", &dc.heldout_path);
  d.Double("heldout_fraction", &dc.heldout_fraction, 0.0, 0.5);
  d.RejectUnknown();
  if (fields) d.AppendFields(fields);
  if (!error && dc.kind != "synthetic") d.Fail("kind", "unknown data kind '" + dc.kind + "': expected synthetic");
  if (!error && dc.background != kBackgroundMarkov && dc.background != kBackgroundFile) {
    d.Fail("background", "unknown background '" + dc.background + "': expected markov or file");
  }
  if (!error && dc.background == kBackgroundMarkov) {
    for (const char* key : {"path", "dtype", "vocab_size", "heldout_path", "heldout_fraction"}) {
      if (d.Has(key)) {
        d.Fail(key, "applies only to data.background: file");
        break;
      }
    }
  }
  if (!error && dc.background == kBackgroundFile) {
    if (dc.path.empty()) d.Fail("path", "is required with data.background: file");
    if (dc.dtype != "uint16" && dc.dtype != "uint32") {
      d.Fail("dtype", "unknown dtype '" + dc.dtype + "': expected uint16 or uint32");
    }
    if (dc.dtype == "uint16" && dc.vocab_size > 65536) {
      d.Fail("vocab_size", "exceeds what uint16 tokens can hold (65536); use dtype uint32");
    }
    if (d.Has("markov_branching") || d.Has("zipf_exponent")) {
      d.Fail(d.Has("markov_branching") ? "markov_branching" : "zipf_exponent",
             "applies only to data.background: markov");
    }
    if (dc.heldout_path.empty() && dc.heldout_fraction <= 0) {
      d.Fail("heldout_fraction", "must be above 0 when there is no data.heldout_path");
    }
    if (!dc.heldout_path.empty() && d.Has("heldout_fraction")) {
      d.Fail("heldout_fraction", "is set together with data.heldout_path; choose one");
    }
  }
  mc.vocab_size = PaddedVocabSize(dc.text_tokens());
  if (!error && dc.resolved_max_distance(mc.seq_len) < dc.min_distance) {
    d.Fail("max_distance", "must be at least data.min_distance");
  }
  if (!error && dc.key_alphabet > dc.text_tokens()) {
    d.Fail("key_alphabet", "must be at most the text vocabulary, " +
                               std::to_string(dc.text_tokens()));
  }
  if (!error && dc.key_alphabet == 1) {
    d.Fail("key_alphabet", "must be at least 2 (0 = the value alphabet)");
  }
  if (!error && dc.min_distance < dc.key_len + 2) {
    d.Fail("min_distance", "must leave room for the record: at least key_len + 2");
  }

  SectionReader e(Section(j, "eval"), "eval", &error);
  EvalConfig& ec = c.eval;
  e.Tokens("every_tokens", &ec.every_tokens, 0, kMaxTrainTokens);
  e.Int("log_points", &ec.log_points, 0, 10'000);
  e.Tokens("log_start", &ec.log_start, 0, kMaxTrainTokens);
  e.Int("heldout_seqs", &ec.heldout_seqs, 0, 1 << 20);
  // Bounded by kMinNiahLength..kMaxNiahLength below, when NIAH runs; without NIAH the lengths
  // mean nothing, and the canonical form still writes the defaults (seq_len / 2 .. 2 seq_len),
  // which must read back.
  e.IntList("niah_lengths", &ec.niah_lengths, 1, 2 * kMaxNiahLength);
  const bool niah_listed = !ec.niah_lengths.empty();
  e.DoubleList("niah_depths", &ec.niah_depths, 0.0, 1.0);
  e.Int("niah_samples", &ec.niah_samples, 0, 1 << 20);
  e.Int("niah_records", &ec.niah_records, 1, 64);
  e.Int("niah_window", &ec.niah_window, 0, 1 << 22);
  e.Int("short_context", &ec.short_context, 0, 1 << 22);
  if (const json* v = e.Find("niah_variants"); v && v->is_array()) {
    for (const json& name : *v) {
      if (name.is_string() && (name == "multi-key" || name == "control")) {
        e.Fail("niah_variants", "'" + name.get<std::string>() +
                                    "' always runs (niah/acc and niah/control/...); list only "
                                    "single, multi-value or multi-query");
        break;
      }
    }
  }
  e.StringList("niah_variants", &ec.niah_variants, {"single", "multi-value", "multi-query"});
  e.Int("ablation_heads", &ec.ablation_heads, 0, 1 << 16);
  e.Int("ablation_draws", &ec.ablation_draws, 1, 1000);
  e.RejectUnknown();
  if (fields) e.AppendFields(fields);
  if (ec.ablation_heads == 0) ec.ablation_draws = EvalConfig().ablation_draws;  // moot
  const bool niah_runs = ec.niah_samples > 0 && !ec.niah_depths.empty();
  if (!error && niah_runs && niah_listed) {
    for (int len : ec.niah_lengths) {
      if (len < kMinNiahLength || len > kMaxNiahLength) {
        e.Fail("niah_lengths", "every entry must be between " + std::to_string(kMinNiahLength) +
                                   " and " + std::to_string(kMaxNiahLength));
        break;
      }
    }
  }
  if (!error && niah_runs) {
    // Lengths must hold the headline task's records; defaults that cannot are left out.
    const int min_len = MinNiahLength(dc, ec.niah_records);
    // The control asks a key no record has: records + 1 distinct keys.
    if (std::pow(static_cast<double>(dc.resolved_key_alphabet()), dc.key_len) <
        ec.niah_records + 1.0) {
      e.Fail("niah_records", "needs " + std::to_string(ec.niah_records + 1) +
                                 " distinct keys; data.key_alphabet ^ data.key_len gives fewer");
    }
    if (ec.niah_lengths.empty()) {
      for (int len : ec.resolved_niah_lengths(mc.seq_len)) {
        if (len >= min_len) ec.niah_lengths.push_back(len);
      }
      if (ec.niah_lengths.empty()) {
        e.Fail("niah_lengths", "none of the default lengths (seq_len / 2, seq_len, 2 seq_len) "
                               "holds eval.niah_records = " + std::to_string(ec.niah_records) +
                               " records (at least " + std::to_string(min_len) +
                               " tokens); list lengths, or lower niah_records");
      }
    }
    for (int len : ec.niah_lengths) {
      if (!error && len < min_len) {
        e.Fail("niah_lengths", "every entry must be at least " + std::to_string(min_len) +
                                   " to hold eval.niah_records = " +
                                   std::to_string(ec.niah_records) +
                                   " records with room between them and the query, got " +
                                   std::to_string(len));
      }
    }
  }
  if (!error && niah_runs && !niah_listed) {
    // The default lengths go into the canonical config, which the trainer reads back with the
    // bounds above: defaults outside them are refused here, where the cause is named.
    const std::vector<int> lengths = ec.resolved_niah_lengths(mc.seq_len);
    const auto [shortest, longest] = std::minmax_element(lengths.begin(), lengths.end());
    if (*shortest < kMinNiahLength || *longest > kMaxNiahLength) {
      std::string shown;
      for (int len : lengths) shown += (shown.empty() ? "" : ", ") + std::to_string(len);
      m.Fail("seq_len", "gives default eval.niah_lengths up to " + std::to_string(*longest) +
                            " ([" + shown + "]: seq_len / 2, seq_len, 2 seq_len), outside " +
                            std::to_string(kMinNiahLength) + ".." +
                            std::to_string(kMaxNiahLength) + "; list eval.niah_lengths");
    }
  }
  if (!error && ec.log_points > 0 && ec.every_tokens > 0) {
    e.Fail("log_points", "is set together with eval.every_tokens; choose one spacing");
  }
  if (!error && ec.log_points > 0 && ec.resolved_log_start(tc.tokens) >= tc.tokens) {
    e.Fail("log_start", "must be below train.tokens = " + std::to_string(tc.tokens));
  }

  // Top-level keys: the sections plus `study`.
  if (!error) {
    for (const auto& [key, value] : j.items()) {
      static const std::vector<std::string> kKeys = {"study", "model", "train", "data", "eval"};
      if (std::find(kKeys.begin(), kKeys.end(), key) == kKeys.end()) {
        error = FieldError{key, "unknown key" + base::DidYouMean(key, kKeys)};
        break;
      }
    }
  }
  if (error) return error;
  *out = std::move(c);
  return std::nullopt;
}

}  // namespace

std::optional<FieldError> ParseCellConfig(const json& j, CellConfig* out) {
  return Parse(j, out, nullptr);
}

std::optional<FieldError> ValidateCanonical(const std::string& canonical_text) {
  const json j = json::parse(canonical_text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return FieldError{"", "the resolved config is not valid JSON"};
  CellConfig reread;
  std::optional<FieldError> e = ParseCellConfig(j, &reread);
  if (e) e->message += " (in the resolved config onset-train reads)";
  return e;
}

const std::vector<std::string>& CellConfigFields() {
  static const std::vector<std::string>* const kFields = [] {
    auto* fields = new std::vector<std::string>;
    CellConfig unused;
    Parse(json::object(), &unused, fields);
    return fields;
  }();
  return *kFields;
}

nlohmann::json CellConfig::ToJson() const {
  json j;
  j["study"] = study;
  j["model"] = {{"layers", model.layers},
                {"d_model", model.d_model},
                {"heads", model.heads},
                {"mlp_hidden", model.resolved_mlp_hidden()},
                {"seq_len", model.seq_len},
                {"rope_base", model.rope_base},
                {"tie_embeddings", model.tie_embeddings},
                {"qk_norm", model.qk_norm},
                {"init_std", model.init_std},
                {"arch", model.arch},
                {"pattern", model.pattern},
                {"full_position", model.full_position},
                {"window", model.window},
                {"pos", model.pos},
                {"chunk_size", model.chunk_size},
                {"kv_heads", model.resolved_kv_heads()}};
  if (model.logn_scaling != kLognOff) j["model"]["logn_scaling"] = model.logn_scaling;
  j["train"] = {{"tokens", train.tokens},
                {"batch_tokens", train.batch_tokens},
                {"micro_batch", train.micro_batch},
                {"lr", train.lr},
                {"min_lr_ratio", train.min_lr_ratio},
                {"warmup_tokens", train.resolved_warmup_tokens()},
                {"schedule", train.schedule},
                {"decay_fraction", train.decay_fraction},
                {"decay_shape", train.decay_shape},
                {"weight_decay", train.weight_decay},
                {"beta1", train.beta1},
                {"beta2", train.beta2},
                {"grad_clip", train.grad_clip},
                {"seed", train.seed},
                {"precision", train.precision},
                {"log_every_steps", train.log_every_steps},
                {"threads", train.threads},
                {"checkpoint_every_tokens", train.resolved_checkpoint_every_tokens()},
                {"keep_checkpoints", train.keep_checkpoints},
                {"keep_checkpoints_at", train.keep_checkpoints_at}};
  j["data"] = {{"kind", data.kind},
               {"markov_branching", data.markov_branching},
               {"zipf_exponent", data.zipf_exponent},
               {"records_per_seq", data.records_per_seq},
               {"key_len", data.key_len},
               {"key_alphabet", data.resolved_key_alphabet()},
               {"value_marker", data.value_marker},
               {"answer_marker", data.answer_marker},
               {"absent_queries", data.absent_queries},
               {"value_len", data.value_len},
               {"min_distance", data.min_distance},
               {"max_distance", data.resolved_max_distance(model.seq_len)},
               {"seed", data.seed}};
  // File-background keys appear only for file backgrounds, so that every markov cell keeps the
  // address it had before token files existed.
  if (data.background == kBackgroundFile) {
    j["data"]["background"] = data.background;
    j["data"]["path"] = data.path;
    j["data"]["dtype"] = data.dtype;
    j["data"]["vocab_size"] = data.vocab_size;
    if (data.heldout_path.empty()) {
      j["data"]["heldout_fraction"] = data.heldout_fraction;
    } else {
      j["data"]["heldout_path"] = data.heldout_path;
    }
    j["data"].erase("markov_branching");
    j["data"].erase("zipf_exponent");
  }
  const bool log_spaced = eval.log_points > 0;
  j["eval"] = {{"every_tokens", log_spaced ? 0 : eval.resolved_every_tokens(train.tokens)},
               {"log_points", eval.log_points},
               {"log_start", log_spaced ? eval.resolved_log_start(train.tokens) : 0},
               {"heldout_seqs", eval.heldout_seqs},
               {"niah_lengths", eval.resolved_niah_lengths(model.seq_len)},
               {"niah_depths", eval.niah_depths},
               {"niah_samples", eval.niah_samples},
               {"niah_records", eval.niah_records},
               {"niah_window", eval.resolved_niah_window(model)},
               {"short_context", eval.resolved_short_context(model)},
               {"niah_variants", eval.niah_variants},
               {"ablation_heads", eval.ablation_heads},
               {"ablation_draws", eval.ablation_draws}};
  return j;
}

std::string CellConfig::CanonicalText() const {
  // nlohmann's json keeps object keys sorted, so dump() is canonical.
  return ToJson().dump();
}

}  // namespace onset::model
