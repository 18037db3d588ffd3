// The resolved configuration of one cell: everything onset-train needs to train it.
//
// This is the contract between the coordinator (which expands a study grid into cells and
// content-addresses each cell by the canonical JSON of this config) and the trainer (which reads
// the same JSON). It depends on nlohmann::json only, never on LibTorch, gRPC or YAML.
//
// Canonical form: ToJson() writes every field, defaults included, with derived values resolved
// (the per-layer pattern, window 0 when the pattern has no sliding-window layer), so two configs
// that train the same model the same way serialise identically.
//
// The fields are listed once, in cell_config.cc: each with its key, how it is read (type and
// range, json_fields.h) and what the canonical form writes for it. ParseCellConfig reads with
// that list and ToJson writes with it, so a field cannot be read and not written or the reverse.
// How `arch` becomes a per-layer pattern, and `pos` the layers with RoPE: arch_pattern.h.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/config/arch_pattern.h"
#include "model/config/json_fields.h"

namespace onset::model {

struct ModelConfig {
  int layers = 4;
  int d_model = 128;
  int heads = 4;
  int mlp_hidden = 0;  // 0 = 8/3 d_model rounded up to a multiple of 32 (SwiGLU)
  int seq_len = 256;   // training context length, tokens
  double rope_base = 10000.0;
  bool tie_embeddings = true;
  bool qk_norm = true;  // RMSNorm on queries and keys (keeps NoPE stable)
  double init_std = 0.02;
  // `arch` as written in the study: "full", "swa[:R]", "lightning[:R]", "gdn[:R]" or an
  // explicit pattern of F/S/L/D letters; ResolvePattern (arch_pattern.h) says what each means.
  std::string arch = "full";
  std::string pattern;  // resolved, one letter per layer, e.g. "SSSF"
  // Where the F layer sits in each group of a ratio arch: "last" (SSSF) or "first" (FSSS).
  // Explicit patterns say it themselves; the canonical form writes "last" wherever the value
  // cannot change the pattern.
  std::string full_position = kFullLast;
  int window = 0;  // sliding window w: query i sees keys j with i - w < j <= i
  // Positional scheme of the attention layers (F, S): rope, nope-full, nope, or the explicit
  // per-type form "F:rope|nope,S:rope|nope" (a type left out takes RoPE). L and D layers never
  // use RoPE: their decay already orders the past. Canonical form: the first of rope, nope,
  // nope-full that places RoPE in the same layers, else "F:..,S:..".
  std::string pos = kPosRope;
  // Log-n scaling: the query at position p >= seq_len is multiplied by log(p + 1) /
  // log(seq_len), keeping attention as sharp beyond the training length as within it, in the
  // NoPE attention layers it names: "off"; "full" (NoPE F layers only, what the method is
  // for: an S layer never sees more than `window` keys, so its attention needs no
  // sharpening); "all" (every NoPE F and S layer). true reads as "full", false as "off".
  // Changes nothing during training (positions < seq_len). Canonical: "off" when no layer
  // it names exists.
  std::string logn_scaling = kLognOff;
  int chunk_size = 64;  // chunk length of the L and D layers' chunkwise-parallel form
  // The short causal depthwise convolution on q, k and v (short_conv.h), as the reference
  // recurrent layers have it: the layer letters that get one. true = "LD", the L and D layers,
  // as fla's Gated DeltaNet and simple-GLA layers; false = "" (none); or letters of F, S, L, D,
  // e.g. "SLD". A cell config without the key has none: that is what every config written
  // before the option existed means, so stored cells keep their models and ids. Study files
  // default it to true (coordinator/study/study_file.cc): a study's L and D layers are the
  // references' unless it says otherwise. Canonical: the letters of this model's pattern that
  // it names, in FSLD order, and left out of the canonical form when none is.
  std::string short_conv;
  int short_conv_kernel = 4;  // taps of that convolution: the current position and K - 1 back
  int kv_heads = 0;           // key/value heads of F and S layers (GQA); 0 = heads
  // Embedding rows, derived from the data's vocabulary (vocab.h) when the cell config is
  // parsed; never written by hand and not part of the canonical form (data determines it).
  int vocab_size = 264;

  int head_dim() const { return d_model / heads; }
  int resolved_mlp_hidden() const;
  int resolved_kv_heads() const { return kv_heads > 0 ? kv_heads : heads; }
  bool HasSliding() const;
  bool HasAttention() const;  // any F or S layer
  bool HasLinear() const;     // any L or D layer
  // Whether layer `i` (0-based) applies RoPE under `pos`.
  bool LayerUsesRope(int i) const;
  // Whether layer `i` scales its queries by log-n (logn_scaling names it).
  bool LayerUsesLogn(int i) const;
  // Whether layer `i` has the short convolution on q, k and v (short_conv names its letter).
  bool LayerUsesShortConv(int i) const;
};

struct TrainConfig {
  int64_t tokens = 1'000'000;   // training budget, tokens
  int64_t batch_tokens = 8192;  // tokens per optimizer step (micro-batches accumulate to it)
  int micro_batch = 8;          // sequences per forward/backward
  double lr = 3e-3;             // peak learning rate
  double min_lr_ratio = 0.1;    // final learning rate as a fraction of lr (both schedules)
  int64_t warmup_tokens = 0;    // 0 = 5% of tokens
  // "cosine": warmup, then cosine decay over the rest of the budget. "wsd" (warmup-stable-
  // decay): warmup, constant lr, then a decay over the last decay_fraction of the budget
  // shaped "linear", "cosine" or "sqrt" (1 - sqrt(progress)). With "cosine", decay_fraction
  // and decay_shape mean nothing and are reset to their defaults.
  std::string schedule = "cosine";
  double decay_fraction = 0.2;
  std::string decay_shape = "linear";
  // The weight of the targets that are query answers (synthetic_data.h, AnswerTokens) in the
  // training loss, every other target weighing 1: the loss is the weighted mean over a
  // micro-batch's targets. 1 = plain next-token loss. train/loss still reports the plain mean,
  // so that cells compare.
  double answer_loss_weight = 1.0;
  double weight_decay = 0.1;  // AdamW, not applied to norms, biases, embeddings
  double beta1 = 0.9;
  double beta2 = 0.95;
  double grad_clip = 1.0;  // global L2 norm; 0 disables
  int64_t seed = 0;        // fixes initialisation and data order
  // Numerics of the forward and backward: "fp32", or "bf16" (bf16 autocast: matmuls and
  // attention in bf16, weights, optimizer state and reductions in fp32). Part of what the cell
  // is, so the device that runs it never chooses it: a bf16 cell is bf16 on a GPU and on a CPU
  // (CPU autocast), an fp32 cell is fp32 everywhere (TF32 stays off).
  std::string precision = "fp32";
  int log_every_steps = 5;  // train/loss cadence
  int threads = 0;          // intra-op CPU threads, 0 = LibTorch's default
  // Checkpoints (written by onset-train into --checkpoint-dir): one every
  // checkpoint_every_tokens (0 = 4 over the budget) and one at the end; the newest
  // keep_checkpoints are kept, plus, forever, the ones at keep_checkpoints_at (token counts,
  // rounded up to a step boundary; the trainer writes a checkpoint there), e.g. the branch
  // points of WSD decays.
  int64_t checkpoint_every_tokens = 0;
  int keep_checkpoints = 2;
  std::vector<int64_t> keep_checkpoints_at;

  int64_t resolved_warmup_tokens() const;
  int64_t resolved_checkpoint_every_tokens() const;
  // The first token of the WSD decay phase: tokens - round(decay_fraction * tokens).
  int64_t wsd_decay_start() const;
};

// Backgrounds of the synthetic stream (background.h).
inline constexpr const char* kBackgroundMarkov = "markov";
inline constexpr const char* kBackgroundFile = "file";

// The built-in synthetic stream (docs/science.md, "Data that makes retrieval learnable"): a
// sparse Markov-chain background over the 256 byte tokens with Zipf-like marginals, into which
// key -> value records are inserted and later queried.
struct DataConfig {
  std::string kind = "synthetic";
  // What fills the sequence around the records: "markov" (the built-in chain) or "file" (a
  // token file). Records and queries are spliced into either; records_per_seq = 0 makes a
  // file background plain language modelling on the file.
  std::string background = kBackgroundMarkov;
  // background "file" only: a flat uint16/uint32 token file (token_file.h), its vocabulary
  // (ids must lie below vocab_size; the record markers get the ids after it), and the held-out
  // text: heldout_path, or else the last heldout_fraction of path.
  std::string path;
  std::string dtype = "uint16";
  int vocab_size = 256;
  std::string heldout_path;
  double heldout_fraction = 0.01;
  int markov_branching = 8;      // successors per background token
  double zipf_exponent = 1.1;    // marginal skew of the background
  double records_per_seq = 2.0;  // mean record/query pairs per training sequence
  int key_len = 2;
  int value_len = 3;
  // Whether records carry the <V> marker between key and value: `<K> key <V> value` (true) or
  // `<K> key value` (false). Without it the value's first token directly follows the key, as
  // the answer directly follows `<Q> key <A>`'s key... one position later; see synthetic_data.h.
  bool value_marker = true;
  // Whether queries carry the <A> marker after the key: `<Q> key <A> value` (true) or
  // `<Q> key value` (false; the value then follows the key in the query as in a record
  // without the value marker: `<K> key value ... <Q> key value`). NIAH prompts end with the
  // question either way.
  bool answer_marker = true;
  // Record keys are drawn from the first key_alphabet text tokens, values from the first
  // min(256, text tokens). 0 = the same as values. A small key alphabet makes each key token
  // recur often, which is what lets a small model learn to match keys in few tokens.
  int key_alphabet = 0;
  int min_distance = 8;  // record-to-query distance, log-uniform over [min, max]
  // Per record, the chance of one more query whose key no record of the sequence has; its
  // answer is value_len <N> tokens (vocab.h). Without such queries "copy some value in the
  // context" is never punished, and a model needs no key match to know a value is asked for:
  // the NIAH control (niah/control/distractor_copy_rate) then reads high even for a model
  // that matches keys.
  double absent_queries = 0.0;
  int max_distance = 0;  // 0 = seq_len
  int64_t seed = 0;      // the background chain's seed (shared by all cells)

  int resolved_max_distance(int seq_len) const;
  // Tokens of a record: <K>, the key, <V> when value_marker, the value.
  int record_len() const { return key_len + value_len + 1 + (value_marker ? 1 : 0); }
  // Tokens of a question: <Q>, the key, <A> when answer_marker.
  int question_len() const { return key_len + 1 + (answer_marker ? 1 : 0); }
  int resolved_key_alphabet() const;
  // The text vocabulary size: 256 bytes for markov, vocab_size for file.
  int text_tokens() const { return background == kBackgroundFile ? vocab_size : 256; }
};

struct EvalConfig {
  int64_t every_tokens = 0;  // 0 = 4 eval points over the budget (plus the end)
  // Log-spaced eval points instead: `log_points` token counts from `log_start` (0 = budget/100)
  // to the budget, equally spaced in log(tokens), where emergence happens early. 0 = off.
  int log_points = 0;
  int64_t log_start = 0;
  int heldout_seqs = 16;  // sequences of held-out loss
  // NIAH prompt lengths; empty = those of {seq_len / 2, seq_len, 2 * seq_len} that hold the
  // records (MinNiahLength). Every length must hold them and lie in kMinNiahLength..
  // kMaxNiahLength when NIAH runs (niah_samples > 0 and some depth); without NIAH they mean
  // nothing and any positive lengths up to 2 kMaxNiahLength read (the canonical form lists the
  // defaults).
  std::vector<int> niah_lengths;
  std::vector<double> niah_depths = {0.1, 0.5, 0.9};
  int niah_samples = 4;  // per (length, depth)
  // Records in each headline (multi-key) NIAH haystack, the needle included; also the
  // records of the control and of the multi-value and multi-query variants (niah_tasks.h).
  int niah_records = 4;
  // The window that splits niah/acc_in_window from niah/acc_beyond_window, tokens. 0 = this
  // cell's window, or seq_len / 4 without S layers. Study files set it to the study's smallest
  // window, so that every cell, full attention included, is bucketed the same way.
  int niah_window = 0;
  // Context cap of eval/short_loss, tokens. 0 = this cell's window, or seq_len / 4 without S
  // layers. Study files set it to the study's smallest window so that every cell, full
  // attention included, reports short-context loss at the same length.
  int short_context = 0;
  // NIAH variants besides the headline multi-key task and its control, which always run
  // (evaluator.h): "single", "multi-value", "multi-query".
  std::vector<std::string> niah_variants;
  // Retrieval-head scores are reported only when at least this many headline samples within
  // seq_len were scored (rh/samples); fewer make a mean too noisy to time a head by.
  int rh_min_samples = 16;
  // Head-masking ablation at the final eval (head_ablation.h): every head (attention and
  // recurrent) scored by the drop its masking alone causes on one half of the in-length
  // headline prompts; on the other half, the top K masked together, `ablation_draws` sets of
  // K other heads with the same layer-type mix (or any mix, named so, where that is
  // impossible), and the top K heads of F layers and of the efficient layers separately.
  // 0 = off.
  int ablation_heads = 0;
  int ablation_draws = 5;

  int64_t resolved_every_tokens(int64_t budget) const;
  int64_t resolved_log_start(int64_t budget) const;
  // The first eval point strictly after `tokens` (the budget itself is always one).
  int64_t NextEvalAfter(int64_t tokens, int64_t budget) const;
  std::vector<int> resolved_niah_lengths(int seq_len) const;
  int resolved_short_context(const ModelConfig& model) const;
  int resolved_niah_window(const ModelConfig& model) const;
};

struct CellConfig {
  std::string study;
  ModelConfig model;
  TrainConfig train;
  DataConfig data;
  EvalConfig eval;

  // Canonical JSON with every field written and derived fields resolved.
  nlohmann::json ToJson() const;
  // Compact canonical text (sorted keys), the input of the content hash.
  std::string CanonicalText() const;
};

// Whether `a` and `b` hold the same value in every field of the field list (as held, not as
// written: a 0 that means "derived" differs from the value it resolves to) and the same
// vocabulary.
bool operator==(const CellConfig& a, const CellConfig& b);
inline bool operator!=(const CellConfig& a, const CellConfig& b) { return !(a == b); }

// Bounds of counts a config may ask for: sane maxima that keep a typo from asking for absurd
// work (docs/study-files.md, "Limits of a study file").
inline constexpr int64_t kMaxTrainTokens = 1'000'000'000'000'000;  // 1e15: budgets, cadences
inline constexpr int64_t kMaxBatchTokens = 10'000'000'000;         // 1e10 tokens per step
inline constexpr int kMinNiahLength = 16;
inline constexpr int kMaxNiahLength = 1 << 22;

// Reads a cell config from JSON, fills defaults, resolves derived fields and validates.
// Unknown keys are errors ("train.lrr: unknown key (did you mean train.lr?)" when a known key
// is close). Token counts accept integers or strings with a K/M/B suffix.
std::optional<FieldError> ParseCellConfig(const nlohmann::json& j, CellConfig* out);

// What onset-train does with a cell's canonical config (CanonicalText, the JSON a job carries):
// read it with ParseCellConfig. The error it would refuse it with, if any. The coordinator runs
// this on every distinct cell it accepts, so that a derived default the trainer would refuse
// (written into the canonical form by ToJson) is refused at submission instead.
std::optional<FieldError> ValidateCanonical(const std::string& canonical_text);

// Every key ParseCellConfig reads in the four sections, by dotted path ("model.arch",
// "train.lr", ...), section by section: the fields a study may vary.
const std::vector<std::string>& CellConfigFields();

// The shortest NIAH prompt with `records` records of a key_len-token key and a value_len-token
// value (niah_tasks.h lays them out): BOS, the records with room to place them wherever the
// first one sits, a background token, and the question `<Q> key <A>`.
int MinNiahLength(const DataConfig& data, int records);

}  // namespace onset::model
