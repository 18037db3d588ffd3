#include "model/config/cell_config.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <set>

#include "base/did_you_mean.h"
#include "model/config/vocab.h"

namespace onset::model {

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

bool ModelConfig::LayerUsesRope(int i) const { return KindUsesRope(pattern.at(i), pos); }

bool ModelConfig::LayerUsesLogn(int i) const {
  return KindUsesLogn(pattern.at(i), pos, logn_scaling);
}

bool ModelConfig::LayerUsesShortConv(int i) const {
  return short_conv.find(pattern.at(i)) != std::string::npos;
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

int DataConfig::resolved_key_alphabet() const {
  const int values = std::min(text_tokens(), 256);
  return key_alphabet > 0 ? std::min(key_alphabet, values) : values;
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

int EvalConfig::resolved_short_context(const ModelConfig& model) const {
  int context = short_context;
  if (context <= 0) context = model.HasSliding() ? model.window : model.seq_len / 4;
  return std::clamp(context, 2, model.seq_len);
}

int EvalConfig::resolved_niah_window(const ModelConfig& model) const {
  if (niah_window > 0) return niah_window;
  return model.HasSliding() ? model.window : std::max(1, model.seq_len / 4);
}

int MinNiahLength(const DataConfig& data, int records) {
  const int span = data.record_len();
  return 1 + span + (records > 1 ? (records + 1) * span - 2 : 0) + 1 + data.question_len();
}

namespace {

using nlohmann::json;

// What the canonical form writes for a field, when not simply the field's value.
struct Canonical {
  // The value written instead of the field's own: a derived default resolved, say.
  std::function<json()> value;
  // Whether the key is written at all. Keys that only some configs have are left out of the
  // others, whose canonical text (and so cell id) is older than the key.
  std::function<bool()> written;
};

template <typename F>
Canonical WrittenAs(F value) {
  return {[value] { return json(value()); }, nullptr};
}

template <typename F>
Canonical WrittenIf(F written) {
  return {nullptr, written};
}

// model.logn_scaling: off, full, all, or true (= full) and false (= off).
void ReadLognScaling(JsonFieldReader& r, const char* key, std::string* out) {
  const json* v = r.Find(key);
  if (!v) return;
  if (v->is_boolean()) {
    *out = v->get<bool>() ? kLognFull : kLognOff;
  } else if (v->is_string() && (*v == kLognOff || *v == kLognFull || *v == kLognAll)) {
    *out = v->get<std::string>();
  } else {
    r.Fail(key,
           "must be off, full (NoPE F layers), all (NoPE F and S layers), true (= full) or "
           "false");
  }
}

// model.short_conv: true (= "LD"), false (= ""), or a string of layer letters F, S, L, D, each
// at most once; held in FSLD order.
void ReadShortConv(JsonFieldReader& r, const char* key, std::string* out) {
  const json* v = r.Find(key);
  if (!v) return;
  if (v->is_boolean()) {
    *out = v->get<bool>() ? kShortConvRecurrent : "";
    return;
  }
  const std::string letters = v->is_string() ? v->get<std::string>() : "";
  std::string held;
  bool ok = v->is_string();
  for (char kind : std::string{kFullAttention, kSlidingWindow, kLinearAttention, kGatedDeltaNet}) {
    const auto n = std::count(letters.begin(), letters.end(), kind);
    ok &= n <= 1;
    if (n == 1) held += kind;
  }
  if (!ok || held.size() != letters.size()) {
    r.Fail(key,
           "must be true (the L and D layers), false, or the layer letters that get the "
           "convolution, each at most once (e.g. \"LD\", \"SLD\")");
    return;
  }
  *out = held;
}

// eval.niah_variants: the variants that always run are named as such.
void ReadNiahVariants(JsonFieldReader& r, const char* key, std::vector<std::string>* out) {
  if (const json* v = r.Find(key); v && v->is_array()) {
    for (const json& name : *v) {
      if (name.is_string() && (name == "multi-key" || name == "control")) {
        r.Fail(key, "'" + name.get<std::string>() +
                        "' always runs (niah/acc and niah/control/...); list only single, "
                        "multi-value or multi-query");
        break;
      }
    }
  }
  r.StringList(key, out, {"single", "multi-value", "multi-query"});
}

// THE LIST OF A CELL CONFIG'S FIELDS, the one place a field is named: its key, how it is read
// (json_fields.h: type and range) and, where the canonical form writes something other than
// the field as held, what it writes. Every use walks it with a visitor `f`, called as
// f(key, field, read[, canonical]): reading (ParseCellConfig), writing (ToJson), listing the
// keys (CellConfigFields) and comparing (operator==). `Config` is CellConfig for reading and
// const CellConfig otherwise. The order is the order of reading, which decides which of
// several bad fields an error names; checks across fields come after each section
// (CheckModel, ...). model.vocab_size is not a field: the data determine it.
template <typename Config, typename Fields>
void TopFields(Config& c, Fields& f) {
  f("study", c.study, AnyString{});
}

template <typename Config, typename Fields>
void ModelFields(Config& c, Fields& f) {
  auto& m = c.model;
  f("layers", m.layers, IntIn{1, 256});
  f("d_model", m.d_model, IntIn{8, 65536});
  f("heads", m.heads, IntIn{1, 1024});
  // Derived defaults are written resolved: a config that leaves them out and one that names the
  // value they resolve to are the same cell (one id). So for kv_heads, warmup_tokens,
  // checkpoint_every_tokens, key_alphabet, max_distance, niah_lengths, niah_window and
  // short_context below.
  f("mlp_hidden", m.mlp_hidden, IntIn{0, 1 << 20},
    WrittenAs([&m] { return m.resolved_mlp_hidden(); }));
  f("seq_len", m.seq_len, IntIn{8, 1 << 22});
  f("rope_base", m.rope_base, NumberIn{1.0, 1e12});
  f("tie_embeddings", m.tie_embeddings, AnyBool{});
  f("qk_norm", m.qk_norm, AnyBool{});
  f("init_std", m.init_std, NumberIn{1e-6, 1.0});
  f("arch", m.arch, AnyString{});
  // Read as written, checked against what `arch` resolves to (CheckModel), which replaces it.
  f("pattern", m.pattern, AnyString{});
  f("full_position", m.full_position, AnyString{});
  f("window", m.window, IntIn{0, 1 << 22});
  f("pos", m.pos, AnyString{});
  // Written when on, so that cells older than the option keep their ids.
  f("logn_scaling", m.logn_scaling, ReadLognScaling,
    WrittenIf([&m] { return m.logn_scaling != kLognOff; }));
  f("chunk_size", m.chunk_size, IntIn{1, 1 << 16});
  // Written when some layer has the convolution (its kernel only then), so that cells older
  // than the option keep their ids; a study turns it on (study_defaults.h).
  f("short_conv", m.short_conv, ReadShortConv, WrittenIf([&m] { return !m.short_conv.empty(); }));
  f("short_conv_kernel", m.short_conv_kernel, IntIn{1, 64},
    WrittenIf([&m] { return !m.short_conv.empty(); }));
  f("kv_heads", m.kv_heads, IntIn{0, 1024}, WrittenAs([&m] { return m.resolved_kv_heads(); }));
}

template <typename Config, typename Fields>
void TrainFields(Config& c, Fields& f) {
  auto& t = c.train;
  f("tokens", t.tokens, TokensIn{1, kMaxTrainTokens});
  f("batch_tokens", t.batch_tokens, TokensIn{1, kMaxBatchTokens});
  f("micro_batch", t.micro_batch, IntIn{1, 1 << 16});
  f("lr", t.lr, NumberIn{0.0, 10.0});
  f("min_lr_ratio", t.min_lr_ratio, NumberIn{0.0, 1.0});
  f("warmup_tokens", t.warmup_tokens, TokensIn{0, kMaxTrainTokens},
    WrittenAs([&t] { return t.resolved_warmup_tokens(); }));
  f("schedule", t.schedule, AnyString{});
  f("decay_fraction", t.decay_fraction, NumberIn{0.0, 1.0});
  f("decay_shape", t.decay_shape, AnyString{});
  // Written when it differs from 1, so that cells older than it keep their ids.
  f("answer_loss_weight", t.answer_loss_weight, NumberIn{0.01, 1000.0},
    WrittenIf([&t] { return t.answer_loss_weight != 1.0; }));
  f("weight_decay", t.weight_decay, NumberIn{0.0, 10.0});
  f("beta1", t.beta1, NumberIn{0.0, 0.999999});
  f("beta2", t.beta2, NumberIn{0.0, 0.999999});
  f("grad_clip", t.grad_clip, NumberIn{0.0, 1e6});
  f("seed", t.seed, IntIn{0, int64_t{1} << 53});
  f("precision", t.precision, AnyString{});
  f("log_every_steps", t.log_every_steps, IntIn{1, 1 << 20});
  f("threads", t.threads, IntIn{0, 1024});
  f("checkpoint_every_tokens", t.checkpoint_every_tokens, TokensIn{0, kMaxTrainTokens},
    WrittenAs([&t] { return t.resolved_checkpoint_every_tokens(); }));
  f("keep_checkpoints", t.keep_checkpoints, IntIn{1, 1 << 20});
  // Read after `tokens`, which bounds it.
  f("keep_checkpoints_at", t.keep_checkpoints_at, TokenCountsIn{1, t.tokens});
}

template <typename Config, typename Fields>
void DataFields(Config& c, Fields& f) {
  auto& d = c.data;
  // File-background keys are written for file backgrounds only, markov ones for markov only,
  // so that every markov cell keeps the address it had before token files existed.
  const auto file = [&d] { return d.background == kBackgroundFile; };
  f("kind", d.kind, AnyString{});
  f("markov_branching", d.markov_branching, IntIn{1, 256}, WrittenIf([file] { return !file(); }));
  f("zipf_exponent", d.zipf_exponent, NumberIn{0.0, 10.0}, WrittenIf([file] { return !file(); }));
  f("records_per_seq", d.records_per_seq, NumberIn{0.0, 1e6});
  f("key_len", d.key_len, IntIn{1, 64});
  f("value_len", d.value_len, IntIn{1, 64});
  f("key_alphabet", d.key_alphabet, IntIn{0, 256},
    WrittenAs([&d] { return d.resolved_key_alphabet(); }));
  f("value_marker", d.value_marker, AnyBool{});
  f("answer_marker", d.answer_marker, AnyBool{});
  f("absent_queries", d.absent_queries, NumberIn{0.0, 1.0});
  f("min_distance", d.min_distance, IntIn{1, 1 << 22});
  f("max_distance", d.max_distance, IntIn{0, 1 << 22},
    WrittenAs([&c] { return c.data.resolved_max_distance(c.model.seq_len); }));
  f("seed", d.seed, IntIn{0, int64_t{1} << 53});
  f("background", d.background, AnyString{}, WrittenIf(file));
  f("path", d.path, AnyString{}, WrittenIf(file));
  f("dtype", d.dtype, AnyString{}, WrittenIf(file));
  f("vocab_size", d.vocab_size, IntIn{1, 1 << 30}, WrittenIf(file));
  f("heldout_path", d.heldout_path, AnyString{},
    WrittenIf([&d, file] { return file() && !d.heldout_path.empty(); }));
  f("heldout_fraction", d.heldout_fraction, NumberIn{0.0, 0.5},
    WrittenIf([&d, file] { return file() && d.heldout_path.empty(); }));
}

template <typename Config, typename Fields>
void EvalFields(Config& c, Fields& f) {
  auto& e = c.eval;
  // Evenly spaced evals write their spacing and no log_start; log-spaced ones the reverse.
  f("every_tokens", e.every_tokens, TokensIn{0, kMaxTrainTokens}, WrittenAs([&c] {
      return c.eval.log_points > 0 ? 0 : c.eval.resolved_every_tokens(c.train.tokens);
    }));
  f("log_points", e.log_points, IntIn{0, 10'000});
  f("log_start", e.log_start, TokensIn{0, kMaxTrainTokens}, WrittenAs([&c] {
      return c.eval.log_points > 0 ? c.eval.resolved_log_start(c.train.tokens) : 0;
    }));
  f("heldout_seqs", e.heldout_seqs, IntIn{0, 1 << 20});
  // Bounded by kMinNiahLength..kMaxNiahLength in CheckEval, when NIAH runs; without NIAH the
  // lengths mean nothing, and the canonical form still writes the defaults (seq_len / 2 ..
  // 2 seq_len), which must read back.
  f("niah_lengths", e.niah_lengths, IntsIn{1, 2 * kMaxNiahLength},
    WrittenAs([&c] { return c.eval.resolved_niah_lengths(c.model.seq_len); }));
  f("niah_depths", e.niah_depths, NumbersIn{0.0, 1.0});
  f("niah_samples", e.niah_samples, IntIn{0, 1 << 20});
  f("niah_records", e.niah_records, IntIn{1, 64});
  // Resolved per cell when left out; a study sets both to its smallest window
  // (study_defaults.h), so that its cells share one split.
  f("niah_window", e.niah_window, IntIn{0, 1 << 22},
    WrittenAs([&c] { return c.eval.resolved_niah_window(c.model); }));
  f("short_context", e.short_context, IntIn{0, 1 << 22},
    WrittenAs([&c] { return c.eval.resolved_short_context(c.model); }));
  f("niah_variants", e.niah_variants, ReadNiahVariants);
  // Written when it differs from its default, so that cells older than it keep their ids.
  f("rh_min_samples", e.rh_min_samples, IntIn{1, 1 << 20},
    WrittenIf([&e] { return e.rh_min_samples != EvalConfig().rh_min_samples; }));
  f("ablation_heads", e.ablation_heads, IntIn{0, 1 << 16});
  f("ablation_draws", e.ablation_draws, IntIn{1, 1000});
}

// The sections of the list, each with its key in a cell config.
constexpr const char* kSections[] = {"model", "train", "data", "eval"};

template <typename Config, typename Fields>
void SectionFields(const std::string& section, Config& c, Fields& f) {
  if (section == "model") ModelFields(c, f);
  if (section == "train") TrainFields(c, f);
  if (section == "data") DataFields(c, f);
  if (section == "eval") EvalFields(c, f);
}

// Visitor: reads each field from its JSON object.
class FieldReading {
 public:
  explicit FieldReading(JsonFieldReader* reader) : reader_(*reader) {}
  template <typename T, typename Read>
  void operator()(const char* key, T& field, const Read& read, const Canonical& = {}) {
    read(reader_, key, &field);
  }

 private:
  JsonFieldReader& reader_;
};

// Visitor: writes each field into a JSON object, as the canonical form has it or (for
// comparing) as held.
class FieldWriting {
 public:
  enum Form { kCanonical, kAsHeld };
  FieldWriting(json* object, Form form) : out_(*object), form_(form) {}
  template <typename T, typename Read>
  void operator()(const char* key, const T& field, const Read&, const Canonical& canonical = {}) {
    if (form_ == kAsHeld) {
      out_[key] = field;
      return;
    }
    if (canonical.written && !canonical.written()) return;
    out_[key] = canonical.value ? canonical.value() : json(field);
  }

 private:
  json& out_;
  Form form_;
};

// Visitor: collects the keys, sorted.
struct KeyListing {
  std::set<std::string> keys;
  template <typename T, typename Read>
  void operator()(const char* key, const T&, const Read&, const Canonical& = {}) {
    keys.insert(key);
  }
};

// Every field of `c`, section by section, in `form`.
json Write(const CellConfig& c, FieldWriting::Form form) {
  json j = json::object();
  FieldWriting top(&j, form);
  TopFields(c, top);
  for (const char* section : kSections) {
    j[section] = json::object();
    FieldWriting fields(&j[section], form);
    SectionFields(section, c, fields);
  }
  return j;
}

// Reads the fields of `section` into `c` with `reader` (which holds that section's JSON
// object), then refuses the keys no field has.
void ReadSection(const char* section, JsonFieldReader* reader, CellConfig* c) {
  FieldReading read(reader);
  SectionFields(section, *c, read);
  reader->RejectUnknown();
}

// Checks across the model's fields; resolves the pattern and canonicalises values that cannot
// change the model.
void CheckModel(JsonFieldReader& m, ModelConfig* model) {
  ModelConfig& mc = *model;
  const std::string written_pattern = mc.pattern;
  if (m.ok() && mc.d_model % mc.heads != 0) m.Fail("heads", "must divide d_model");
  if (m.ok() && mc.head_dim() % 2 != 0) m.Fail("heads", "d_model / heads must be even (RoPE)");
  if (m.ok() && mc.heads % mc.resolved_kv_heads() != 0) {
    m.Fail("kv_heads", "must divide model.heads = " + std::to_string(mc.heads) + " (0 = heads)");
  }
  if (m.ok() && mc.full_position != kFullLast && mc.full_position != kFullFirst) {
    m.Fail("full_position",
           "unknown full_position '" + mc.full_position + "': expected last or first");
  }
  if (m.ok()) {
    if (auto e = ResolvePattern(mc.arch, mc.layers, &mc.pattern, mc.full_position)) {
      m.Fail("arch", *e);
    }
  }
  if (m.ok()) {
    // Values that cannot change the model are canonicalised, so they never split cells.
    if (!ArchUsesFullPosition(mc.arch)) mc.full_position = kFullLast;
    if (!mc.HasLinear()) mc.chunk_size = ModelConfig().chunk_size;
    // Only the letters of layers this model has: the others cannot change it.
    std::string used;
    for (char kind : mc.short_conv) {
      if (mc.pattern.find(kind) != std::string::npos) used += kind;
    }
    mc.short_conv = used;
    if (used.empty()) mc.short_conv_kernel = ModelConfig().short_conv_kernel;
    mc.kv_heads = mc.HasAttention() ? mc.resolved_kv_heads() : mc.heads;
  }
  if (m.ok() && !written_pattern.empty() && written_pattern != mc.pattern) {
    m.Fail("pattern", "'" + written_pattern + "' disagrees with arch '" + mc.arch +
                          "' (resolved to '" + mc.pattern + "'); leave it out");
  }
  if (m.ok() && !IsKnownPos(mc.pos)) {
    m.Fail("pos", "unknown positional scheme '" + mc.pos +
                      "': expected rope, nope-full, nope or a per-type form like F:nope,S:rope");
  }
  if (m.ok()) {
    mc.pos = CanonicalPos(mc.pattern, mc.pos);
    mc.logn_scaling = CanonicalLognScaling(mc.pattern, mc.pos, mc.logn_scaling);
  }
  if (m.ok()) {
    if (mc.HasSliding()) {
      if (mc.window < 1) m.Fail("window", "is required (>= 1) for an arch with S layers");
    } else {
      mc.window = 0;  // a window means nothing without S layers; keeps the hash free of it
    }
  }
}

// Checks across the training fields; resets the decay of a cosine schedule, which has none.
void CheckTrain(JsonFieldReader& t, const ModelConfig& mc, TrainConfig* train) {
  TrainConfig& tc = *train;
  if (t.ok() && !(tc.lr > 0)) {
    t.Fail("lr", "must be above 0: a zero learning rate trains nothing");
  }
  if (t.ok() && tc.batch_tokens < mc.seq_len) {
    t.Fail("batch_tokens", "must be at least model.seq_len = " + std::to_string(mc.seq_len));
  }
  if (t.ok() && tc.resolved_warmup_tokens() >= tc.tokens) {
    t.Fail("warmup_tokens", "must be smaller than train.tokens");
  }
  if (t.ok() && tc.precision != "fp32" && tc.precision != "bf16") {
    t.Fail("precision", "unknown precision '" + tc.precision + "': expected fp32 or bf16");
  }
  if (t.ok() && tc.schedule != "cosine" && tc.schedule != "wsd") {
    t.Fail("schedule", "unknown schedule '" + tc.schedule + "': expected cosine or wsd");
  }
  if (t.ok() && tc.decay_shape != "linear" && tc.decay_shape != "cosine" &&
      tc.decay_shape != "sqrt") {
    t.Fail("decay_shape",
           "unknown shape '" + tc.decay_shape + "': expected linear, cosine or sqrt");
  }
  if (t.ok() && tc.schedule == "wsd") {
    if (tc.wsd_decay_start() >= tc.tokens) {
      t.Fail("decay_fraction", "must leave at least one token of decay (> 0)");
    } else if (tc.resolved_warmup_tokens() > tc.wsd_decay_start()) {
      t.Fail("warmup_tokens", "must end before the decay starts at " +
                                  std::to_string(tc.wsd_decay_start()) + " tokens");
    }
  }
  if (t.ok() && tc.schedule == "cosine") {
    const TrainConfig defaults;
    tc.decay_fraction = defaults.decay_fraction;
    tc.decay_shape = defaults.decay_shape;
  }
}

// Checks across the data fields; sets the model's vocabulary from the data's.
void CheckData(JsonFieldReader& d, CellConfig* c) {
  const DataConfig& dc = c->data;
  if (d.ok() && dc.kind != "synthetic") {
    d.Fail("kind", "unknown data kind '" + dc.kind + "': expected synthetic");
  }
  if (d.ok() && dc.background != kBackgroundMarkov && dc.background != kBackgroundFile) {
    d.Fail("background", "unknown background '" + dc.background + "': expected markov or file");
  }
  if (d.ok() && dc.background == kBackgroundMarkov) {
    for (const char* key : {"path", "dtype", "vocab_size", "heldout_path", "heldout_fraction"}) {
      if (d.Has(key)) {
        d.Fail(key, "applies only to data.background: file");
        break;
      }
    }
  }
  if (d.ok() && dc.background == kBackgroundFile) {
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
  c->model.vocab_size = PaddedVocabSize(dc.text_tokens());
  if (d.ok() && dc.resolved_max_distance(c->model.seq_len) < dc.min_distance) {
    d.Fail("max_distance", "must be at least data.min_distance");
  }
  if (d.ok() && dc.key_alphabet > dc.text_tokens()) {
    d.Fail("key_alphabet",
           "must be at most the text vocabulary, " + std::to_string(dc.text_tokens()));
  }
  if (d.ok() && dc.key_alphabet == 1) {
    d.Fail("key_alphabet", "must be at least 2 (0 = the value alphabet)");
  }
  if (d.ok() && dc.min_distance < dc.key_len + 2) {
    d.Fail("min_distance", "must leave room for the record: at least key_len + 2");
  }
}

// Checks across the eval fields (NIAH lengths against the records they must hold, the
// spacing of eval points); fills the default NIAH lengths that hold the records. `m` reads the
// model section: a seq_len whose default lengths are out of bounds is its error.
void CheckEval(JsonFieldReader& e, JsonFieldReader& m, CellConfig* c) {
  EvalConfig& ec = c->eval;
  const ModelConfig& mc = c->model;
  const DataConfig& dc = c->data;
  const bool niah_listed = !ec.niah_lengths.empty();
  if (ec.ablation_heads == 0) ec.ablation_draws = EvalConfig().ablation_draws;  // moot
  const bool niah_runs = ec.niah_samples > 0 && !ec.niah_depths.empty();
  if (e.ok() && niah_runs && niah_listed) {
    for (int len : ec.niah_lengths) {
      if (len < kMinNiahLength || len > kMaxNiahLength) {
        e.Fail("niah_lengths", "every entry must be between " + std::to_string(kMinNiahLength) +
                                   " and " + std::to_string(kMaxNiahLength));
        break;
      }
    }
  }
  if (e.ok() && niah_runs) {
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
        e.Fail("niah_lengths",
               "none of the default lengths (seq_len / 2, seq_len, 2 seq_len) "
               "holds eval.niah_records = " +
                   std::to_string(ec.niah_records) + " records (at least " +
                   std::to_string(min_len) + " tokens); list lengths, or lower niah_records");
      }
    }
    for (int len : ec.niah_lengths) {
      if (e.ok() && len < min_len) {
        e.Fail("niah_lengths",
               "every entry must be at least " + std::to_string(min_len) +
                   " to hold eval.niah_records = " + std::to_string(ec.niah_records) +
                   " records with room between them and the query, got " + std::to_string(len));
      }
    }
  }
  if (e.ok() && niah_runs && !niah_listed) {
    // The default lengths go into the canonical config, which the trainer reads back with the
    // bounds above: defaults outside them are refused here, where the cause is named.
    const std::vector<int> lengths = ec.resolved_niah_lengths(mc.seq_len);
    const auto [shortest, longest] = std::minmax_element(lengths.begin(), lengths.end());
    if (*shortest < kMinNiahLength || *longest > kMaxNiahLength) {
      std::string shown;
      for (int len : lengths) shown += (shown.empty() ? "" : ", ") + std::to_string(len);
      m.Fail("seq_len", "gives default eval.niah_lengths up to " + std::to_string(*longest) +
                            " ([" + shown + "]: seq_len / 2, seq_len, 2 seq_len), outside " +
                            std::to_string(kMinNiahLength) + ".." + std::to_string(kMaxNiahLength) +
                            "; list eval.niah_lengths");
    }
  }
  if (e.ok() && ec.log_points > 0 && ec.every_tokens > 0) {
    e.Fail("log_points", "is set together with eval.every_tokens; choose one spacing");
  }
  if (e.ok() && ec.log_points > 0 && ec.resolved_log_start(c->train.tokens) >= c->train.tokens) {
    e.Fail("log_start", "must be below train.tokens = " + std::to_string(c->train.tokens));
  }
}

}  // namespace

std::optional<FieldError> ParseCellConfig(const json& j, CellConfig* out) {
  if (!j.is_object()) return FieldError{"", "cell config must be a JSON object"};
  std::optional<FieldError> error;
  CellConfig c;
  JsonFieldReader top(j, "", &error);
  FieldReading read_top(&top);
  TopFields(c, read_top);
  if (error) return error;

  // Section by section, each read whole and then checked, so that the first error in reading
  // order is the one reported.
  JsonFieldReader m(MemberOrNull(j, "model"), "model", &error);
  ReadSection("model", &m, &c);
  CheckModel(m, &c.model);
  JsonFieldReader t(MemberOrNull(j, "train"), "train", &error);
  ReadSection("train", &t, &c);
  CheckTrain(t, c.model, &c.train);
  JsonFieldReader d(MemberOrNull(j, "data"), "data", &error);
  ReadSection("data", &d, &c);
  CheckData(d, &c);
  JsonFieldReader e(MemberOrNull(j, "eval"), "eval", &error);
  ReadSection("eval", &e, &c);
  CheckEval(e, m, &c);

  // Top-level keys: the sections plus `study`.
  if (!error) {
    static const std::vector<std::string> kKeys = {"study", "model", "train", "data", "eval"};
    for (const auto& [key, value] : j.items()) {
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
    const CellConfig config;
    for (const char* section : kSections) {
      KeyListing listing;
      SectionFields(section, config, listing);
      for (const std::string& key : listing.keys) {
        fields->push_back(std::string(section) + "." + key);
      }
    }
    return fields;
  }();
  return *kFields;
}

bool operator==(const CellConfig& a, const CellConfig& b) {
  return a.model.vocab_size == b.model.vocab_size &&
         Write(a, FieldWriting::kAsHeld) == Write(b, FieldWriting::kAsHeld);
}

nlohmann::json CellConfig::ToJson() const { return Write(*this, FieldWriting::kCanonical); }

std::string CellConfig::CanonicalText() const {
  // nlohmann's json keeps object keys sorted, so dump() is canonical.
  return ToJson().dump();
}

}  // namespace onset::model
