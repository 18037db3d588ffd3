#include "model/config/cell_config.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

namespace onset::model {
namespace {

using nlohmann::json;

CellConfig ParseOk(const json& j) {
  CellConfig c;
  auto error = ParseCellConfig(j, &c);
  EXPECT_FALSE(error.has_value()) << error->ToString();
  return c;
}

std::string ParseError(const json& j) {
  CellConfig c;
  auto error = ParseCellConfig(j, &c);
  return error ? error->ToString() : "no error";
}

TEST(CellConfigTest, DefaultsFillAnEmptyObject) {
  CellConfig c = ParseOk(json::object());
  EXPECT_EQ(c.model.layers, 4);
  EXPECT_EQ(c.model.d_model, 128);
  EXPECT_EQ(c.model.pattern, "FFFF");
  EXPECT_EQ(c.model.window, 0);
  EXPECT_EQ(c.model.resolved_mlp_hidden(), 352);  // 8/3 * 128 = 341.3 -> 352
  EXPECT_EQ(c.train.tokens, 1'000'000);
  EXPECT_EQ(c.train.resolved_warmup_tokens(), 50'000);
  EXPECT_DOUBLE_EQ(c.train.lr, 3e-3);
  EXPECT_EQ(c.data.resolved_max_distance(c.model.seq_len), 256);
  EXPECT_EQ(c.eval.resolved_every_tokens(c.train.tokens), 250'000);
  EXPECT_EQ(c.eval.resolved_niah_lengths(256), (std::vector<int>{128, 256, 512}));
}

TEST(CellConfigTest, UnknownKeysNameTheirPathAndTheClosestKnownKey) {
  EXPECT_EQ(ParseError({{"train", {{"lrr", 1.0}}}}),
            "train.lrr: unknown key (did you mean train.lr?)");
  EXPECT_EQ(ParseError({{"modle", json::object()}}), "modle: unknown key (did you mean model?)");
  EXPECT_EQ(ParseError({{"eval", {{"xyzzy", 1}}}}), "eval.xyzzy: unknown key");
}

TEST(CellConfigTest, FieldsListsEveryKeyTheSectionsRead) {
  const std::vector<std::string>& fields = CellConfigFields();
  for (const char* path :
       {"model.arch", "model.window", "model.d_model", "train.lr", "train.seed", "train.tokens",
        "data.seed", "data.path", "eval.niah_lengths", "eval.short_context"}) {
    EXPECT_NE(std::find(fields.begin(), fields.end(), path), fields.end()) << path;
  }
  EXPECT_EQ(std::find(fields.begin(), fields.end(), "model.vocab_size"), fields.end());
  // Every listed field is accepted where it is listed.
  for (const std::string& path : fields) {
    const size_t dot = path.find('.');
    json j = {{path.substr(0, dot), {{path.substr(dot + 1), nullptr}}}};
    EXPECT_EQ(ParseError(j), "no error") << path;
  }
}

TEST(CellConfigTest, WrongTypesNameTheirPath) {
  EXPECT_EQ(ParseError({{"train", {{"lr", "fast"}}}}), "train.lr: must be a number");
  EXPECT_EQ(ParseError({{"model", {{"layers", 2.5}}}}), "model.layers: must be an integer");
  EXPECT_EQ(ParseError({{"model", 3}}), "model: must be a mapping");
}

TEST(CellConfigTest, TokenCountsAcceptSuffixes) {
  EXPECT_EQ(ParseTokenCount("250K"), 250'000);
  EXPECT_EQ(ParseTokenCount("1.5M"), 1'500'000);
  EXPECT_EQ(ParseTokenCount("2B"), 2'000'000'000);
  EXPECT_EQ(ParseTokenCount("1000"), 1000);
  EXPECT_EQ(ParseTokenCount("1.5"), std::nullopt);
  EXPECT_EQ(ParseTokenCount("-5K"), std::nullopt);
  EXPECT_EQ(ParseTokenCount("K"), std::nullopt);
  // Beyond a double's range: no count, and no exception either.
  EXPECT_EQ(ParseTokenCount(std::string(400, '1') + "K"), std::nullopt);
  EXPECT_EQ(ParseError({{"train", {{"tokens", std::string(400, '1')}}}}),
            "train.tokens: must be at most 1000000000000000 tokens (1e15)");
  EXPECT_EQ(ParseError({{"train", {{"lr", 0}}}}),
            "train.lr: must be above 0: a zero learning rate trains nothing");
  CellConfig c = ParseOk({{"train", {{"tokens", "2M"}, {"batch_tokens", "16K"}}}});
  EXPECT_EQ(c.train.tokens, 2'000'000);
  EXPECT_EQ(c.train.batch_tokens, 16'000);
}

TEST(CellConfigTest, WindowIsDroppedWithoutSlidingLayers) {
  CellConfig full = ParseOk({{"model", {{"arch", "full"}, {"window", 64}}}});
  EXPECT_EQ(full.model.window, 0);
  CellConfig swa = ParseOk({{"model", {{"arch", "swa"}, {"window", 64}}}});
  EXPECT_EQ(swa.model.window, 64);
  EXPECT_EQ(ParseError({{"model", {{"arch", "swa"}}}}),
            "model.window: is required (>= 1) for an arch with S layers");
}

TEST(CellConfigTest, ShortContextDefaultsToTheWindowOrAQuarterOfTheContext) {
  CellConfig swa = ParseOk({{"model", {{"arch", "swa"}, {"window", 64}, {"seq_len", 256}}}});
  EXPECT_EQ(swa.eval.resolved_short_context(swa.model), 64);
  CellConfig full = ParseOk({{"model", {{"arch", "full"}, {"seq_len", 256}}}});
  EXPECT_EQ(full.eval.resolved_short_context(full.model), 64);
  CellConfig set =
      ParseOk({{"model", {{"arch", "full"}, {"seq_len", 256}}}, {"eval", {{"short_context", 16}}}});
  EXPECT_EQ(set.ToJson()["eval"]["short_context"], 16);
}

TEST(CellConfigTest, NiahVariantsAndAblationHeads) {
  CellConfig d = ParseOk(json::object());
  EXPECT_TRUE(d.eval.niah_variants.empty());
  EXPECT_EQ(d.eval.niah_records, 4);
  EXPECT_EQ(d.train.precision, "fp32");
  EXPECT_EQ(d.eval.ablation_heads, 0);
  CellConfig set =
      ParseOk({{"eval", {{"niah_variants", {"single", "multi-query"}}, {"ablation_heads", 4}}}});
  EXPECT_EQ(set.ToJson()["eval"]["niah_variants"], json({"single", "multi-query"}));
  EXPECT_EQ(set.ToJson()["eval"]["ablation_heads"], 4);
  EXPECT_EQ(set.ToJson()["eval"]["ablation_draws"], 5);
  EXPECT_EQ(ParseError({{"eval", {{"niah_variants", {"multi"}}}}}),
            "eval.niah_variants: every entry must be one of single, multi-value, multi-query");
  // The headline and its control always run: naming them is a mistake worth explaining.
  EXPECT_EQ(ParseError({{"eval", {{"niah_variants", {"multi-key"}}}}})
                .rfind("eval.niah_variants: 'multi-key' always runs", 0),
            0u);
  EXPECT_EQ(ParseError({{"eval", {{"ablation_heads", -1}}}}).rfind("eval.ablation_heads", 0), 0u);
  // Draws mean nothing without the ablation: they never split cells then.
  EXPECT_EQ(ParseOk({{"eval", {{"ablation_draws", 9}}}}).CanonicalText(),
            ParseOk(json::object()).CanonicalText());
  // Precision is part of the cell.
  EXPECT_NE(ParseOk({{"train", {{"precision", "bf16"}}}}).CanonicalText(),
            ParseOk(json::object()).CanonicalText());
  EXPECT_EQ(ParseError({{"train", {{"precision", "fp16"}}}}).rfind("train.precision: unknown", 0),
            0u);
  // The bucket window: this cell's window, seq_len / 4 without S layers, or what the study set.
  CellConfig swa = ParseOk({{"model", {{"arch", "swa"}, {"window", 16}, {"seq_len", 128}}}});
  EXPECT_EQ(swa.eval.resolved_niah_window(swa.model), 16);
  CellConfig full = ParseOk({{"model", {{"arch", "full"}, {"seq_len", 128}}}});
  EXPECT_EQ(full.eval.resolved_niah_window(full.model), 32);
  CellConfig study = ParseOk({{"model", {{"arch", "full"}}}, {"eval", {{"niah_window", 8}}}});
  EXPECT_EQ(study.ToJson()["eval"]["niah_window"], 8);
}

TEST(CellConfigTest, NiahLengthsMustHoldTheRecords) {
  // 4-token keys, 3-token values: records of 9 tokens; 4 of them need 60 tokens.
  DataConfig long_keys;
  long_keys.key_len = 4;
  long_keys.value_len = 3;
  EXPECT_EQ(MinNiahLength(long_keys, 4), 60);
  long_keys.value_marker = false;  // records of 8 tokens
  EXPECT_EQ(MinNiahLength(long_keys, 4), 1 + 8 + 5 * 8 - 2 + 1 + 6);
  const json data = {{"key_len", 4}, {"value_len", 3}};
  EXPECT_EQ(ParseError({{"eval", {{"niah_lengths", {16, 64}}}}, {"data", data}}),
            "eval.niah_lengths: every entry must be at least 60 to hold eval.niah_records = 4 "
            "records with room between them and the query, got 16");
  // The defaults keep what fits: seq_len 64 gives 32 (too short), 64 and 128.
  CellConfig c = ParseOk({{"model", {{"seq_len", 64}}}, {"data", data}});
  EXPECT_EQ(c.eval.niah_lengths, (std::vector<int>{64, 128}));
  EXPECT_EQ(c.ToJson()["eval"]["niah_lengths"], json({64, 128}));
  EXPECT_EQ(ParseError({{"model", {{"seq_len", 16}}}, {"data", data}})
                .rfind("eval.niah_lengths: none of the default lengths", 0),
            0u);
  // The control needs one key more than the records: 2 one-token keys cannot give 5.
  EXPECT_EQ(ParseError({{"data", {{"key_len", 1}, {"key_alphabet", 2}}}}),
            "eval.niah_records: needs 5 distinct keys; data.key_alphabet ^ data.key_len gives "
            "fewer");
  EXPECT_EQ(ParseOk({{"data", {{"key_alphabet", 16}}}}).ToJson()["data"]["key_alphabet"], 16);
  EXPECT_EQ(ParseOk(json::object()).ToJson()["data"]["key_alphabet"], 256);
  // No NIAH samples: no lengths to check.
  EXPECT_FALSE(ParseCellConfig(
      {{"model", {{"seq_len", 16}}}, {"data", data}, {"eval", {{"niah_samples", 0}}}}, &c));
}

TEST(CellConfigTest, EvalPointsAreEvenlyOrLogSpaced) {
  CellConfig even = ParseOk({{"train", {{"tokens", "1M"}}}, {"eval", {{"every_tokens", "300K"}}}});
  EXPECT_EQ(even.eval.NextEvalAfter(0, 1'000'000), 300'000);
  EXPECT_EQ(even.eval.NextEvalAfter(300'000, 1'000'000), 600'000);
  EXPECT_EQ(even.eval.NextEvalAfter(900'000, 1'000'000), 1'000'000);  // the budget, not 1.2M

  // 5 points from 10K to 1M: 10K, 31.6K, 100K, 316K, 1M.
  CellConfig log =
      ParseOk({{"train", {{"tokens", "1M"}}}, {"eval", {{"log_points", 5}, {"log_start", "10K"}}}});
  EXPECT_EQ(log.eval.NextEvalAfter(0, 1'000'000), 10'000);
  EXPECT_EQ(log.eval.NextEvalAfter(10'000, 1'000'000), 31'623);
  EXPECT_EQ(log.eval.NextEvalAfter(99'999, 1'000'000), 100'000);
  EXPECT_EQ(log.eval.NextEvalAfter(316'228, 1'000'000), 1'000'000);
  EXPECT_EQ(log.ToJson()["eval"]["every_tokens"], 0);
  EXPECT_EQ(log.ToJson()["eval"]["log_start"], 10'000);

  EXPECT_EQ(ParseError({{"eval", {{"log_points", 4}, {"every_tokens", 1000}}}}),
            "eval.log_points: is set together with eval.every_tokens; choose one spacing");
  EXPECT_EQ(ParseError({{"train", {{"tokens", 1000}, {"batch_tokens", 256}}},
                        {"eval", {{"log_points", 4}, {"log_start", 1000}}}}),
            "eval.log_start: must be below train.tokens = 1000");
}

TEST(CellConfigTest, NewModelFieldsValidateAndCanonicalise) {
  CellConfig c = ParseOk({{"model", {{"arch", "gdn"}, {"full_position", "first"}}}});
  EXPECT_EQ(c.model.pattern, "FDDD");
  EXPECT_EQ(c.model.chunk_size, 64);
  EXPECT_EQ(c.model.kv_heads, 4);  // 0 resolves to heads
  json m = c.ToJson()["model"];
  EXPECT_EQ(m["full_position"], "first");
  EXPECT_EQ(m["chunk_size"], 64);
  EXPECT_EQ(m["kv_heads"], 4);
  EXPECT_EQ(ParseOk(c.ToJson()).CanonicalText(), c.CanonicalText());

  // Values that cannot change the model do not split cells.
  CellConfig explicit_first = ParseOk({{"model", {{"arch", "DDDF"}, {"full_position", "first"}}}});
  EXPECT_EQ(explicit_first.model.full_position, "last");
  CellConfig full_chunk = ParseOk({{"model", {{"arch", "full"}, {"chunk_size", 16}}}});
  EXPECT_EQ(full_chunk.CanonicalText(), ParseOk({{"model", {{"arch", "full"}}}}).CanonicalText());
  CellConfig lin_chunk = ParseOk({{"model", {{"arch", "lightning"}, {"chunk_size", 16}}}});
  EXPECT_EQ(lin_chunk.ToJson()["model"]["chunk_size"], 16);
  CellConfig gqa = ParseOk({{"model", {{"arch", "full"}, {"kv_heads", 2}}}});
  EXPECT_EQ(gqa.ToJson()["model"]["kv_heads"], 2);
  CellConfig no_attention = ParseOk({{"model", {{"arch", "gdn:0"}, {"kv_heads", 2}}}});
  EXPECT_EQ(no_attention.model.kv_heads, 4);

  EXPECT_EQ(ParseError({{"model", {{"kv_heads", 3}}}}),
            "model.kv_heads: must divide model.heads = 4 (0 = heads)");
  EXPECT_EQ(ParseError({{"model", {{"arch", "gdn"}, {"full_position", "middle"}}}}),
            "model.full_position: unknown full_position 'middle': expected last or first");
  EXPECT_EQ(ParseError({{"model", {{"chunk_size", 0}}}}),
            "model.chunk_size: must be between 1 and 65536");
  EXPECT_EQ(ParseError({{"model", {{"arch", "lightning:q"}}}}).rfind("model.arch: ratio in", 0),
            0u);
}

TEST(CellConfigTest, RopePerLayerFollowsPos) {
  CellConfig c = ParseOk({{"model", {{"arch", "swa"}, {"window", 8}, {"pos", "nope-full"}}}});
  EXPECT_TRUE(c.model.LayerUsesRope(0));
  EXPECT_TRUE(c.model.LayerUsesRope(2));
  EXPECT_FALSE(c.model.LayerUsesRope(3));
  c = ParseOk({{"model", {{"pos", "nope"}}}});
  EXPECT_FALSE(c.model.LayerUsesRope(0));
  // L and D layers never take RoPE, whatever pos says.
  c = ParseOk({{"model", {{"arch", "LDSF"}, {"window", 8}, {"pos", "rope"}}}});
  EXPECT_FALSE(c.model.LayerUsesRope(0));
  EXPECT_FALSE(c.model.LayerUsesRope(1));
  EXPECT_TRUE(c.model.LayerUsesRope(2));
  EXPECT_TRUE(c.model.LayerUsesRope(3));
  EXPECT_EQ(ParseError({{"model", {{"pos", "alibi"}}}}),
            "model.pos: unknown positional scheme 'alibi': expected rope, nope-full, nope or a "
            "per-type form like F:nope,S:rope");
}

TEST(CellConfigTest, SchemesThatPlaceRopeAlikeAreOneCell) {
  auto pos = [](const std::string& arch, const std::string& p) {
    return ParseOk({{"model", {{"arch", arch}, {"window", 8}, {"pos", p}}}}).model.pos;
  };
  EXPECT_EQ(pos("full", "nope-full"), "nope");  // every layer is F
  EXPECT_EQ(pos("full", "rope"), "rope");
  EXPECT_EQ(pos("swa:0", "nope-full"), "rope");  // no F layer
  EXPECT_EQ(pos("swa:0", "nope"), "nope");
  EXPECT_EQ(pos("gdn", "nope-full"), "nope");  // DDDF: only the F layer could take RoPE
  EXPECT_EQ(pos("gdn", "rope"), "rope");
  EXPECT_EQ(pos("gdn:0", "nope"), "rope");          // no attention layer: nothing to encode
  EXPECT_EQ(pos("swa", "nope-full"), "nope-full");  // SSSF: all three differ
  EXPECT_EQ(pos("swa", "nope"), "nope");
}

TEST(CellConfigTest, ExplicitPerTypePositionsAndLognScaling) {
  CellConfig c = ParseOk({{"model", {{"arch", "swa"}, {"window", 8}, {"pos", "S:nope,F:rope"}}}});
  EXPECT_EQ(c.model.pos, "F:rope,S:nope");  // the one scheme without a name, canonically ordered
  EXPECT_FALSE(c.model.LayerUsesRope(0));
  EXPECT_TRUE(c.model.LayerUsesRope(3));
  // Named schemes win where they mean the same layers.
  auto pos = [](const std::string& p) {
    return ParseOk({{"model", {{"arch", "swa"}, {"window", 8}, {"pos", p}}}}).model.pos;
  };
  EXPECT_EQ(pos("F:nope,S:rope"), "nope-full");
  EXPECT_EQ(pos("F:nope"), "nope-full");  // S left out: RoPE
  EXPECT_EQ(pos("S:nope,F:nope"), "nope");
  EXPECT_EQ(pos("S:rope"), "rope");
  for (const char* bad : {"F:nope,F:rope", "F=nope", "L:nope", "F:alibi", "F:nope,"}) {
    EXPECT_EQ(ParseError({{"model", {{"pos", bad}}}}).rfind("model.pos: unknown positional", 0), 0u)
        << bad;
  }

  // Log-n scaling: true means NoPE F layers ("full"); kept only where a layer it names
  // exists, written only when on.
  CellConfig on = ParseOk({{"model", {{"pos", "nope"}, {"logn_scaling", true}}}});
  EXPECT_EQ(on.model.logn_scaling, "full");
  EXPECT_EQ(on.ToJson()["model"]["logn_scaling"], "full");
  EXPECT_EQ(ParseOk(on.ToJson()).CanonicalText(), on.CanonicalText());
  CellConfig moot = ParseOk({{"model", {{"pos", "rope"}, {"logn_scaling", true}}}});
  EXPECT_EQ(moot.model.logn_scaling, "off");
  EXPECT_EQ(moot.CanonicalText(), ParseOk(json::object()).CanonicalText());
  EXPECT_FALSE(ParseOk(json::object()).ToJson()["model"].contains("logn_scaling"));
  // NoPE only in S layers: "full" touches nothing there, "all" does.
  const json s_nope = {{"arch", "swa"}, {"window", 8}, {"pos", "F:rope,S:nope"}};
  json with = s_nope;
  with["logn_scaling"] = "full";
  EXPECT_EQ(ParseOk({{"model", with}}).model.logn_scaling, "off");
  with["logn_scaling"] = "all";
  EXPECT_EQ(ParseOk({{"model", with}}).model.logn_scaling, "all");
  // "all" in a model whose NoPE layers are all F is "full": the same model.
  EXPECT_EQ(ParseOk({{"model", {{"pos", "nope"}, {"logn_scaling", "all"}}}}).CanonicalText(),
            on.CanonicalText());
  EXPECT_EQ(
      ParseError({{"model", {{"logn_scaling", "yes"}}}}).rfind("model.logn_scaling: must be", 0),
      0u);
}

// Three configs that between them set every field to a value other than its default, each
// written in canonical form: each must read and write back unchanged.
std::vector<json> EveryFieldConfigs() {
  const json markov = json::parse(R"({
    "study": "every-field",
    "model": {"layers": 8, "d_model": 96, "heads": 6, "mlp_hidden": 320, "seq_len": 128,
              "rope_base": 20000.0, "tie_embeddings": false, "qk_norm": false, "init_std": 0.03,
              "arch": "gdn", "pattern": "FDDDFDDD", "full_position": "first", "window": 0,
              "pos": "nope", "logn_scaling": "full", "chunk_size": 32, "kv_heads": 3,
              "short_conv": "FD", "short_conv_kernel": 3},
    "train": {"tokens": 2000000, "batch_tokens": 16384, "micro_batch": 4, "lr": 0.001,
              "answer_loss_weight": 4.0,
              "min_lr_ratio": 0.05, "warmup_tokens": 100000, "schedule": "wsd",
              "decay_fraction": 0.25, "decay_shape": "sqrt", "weight_decay": 0.05, "beta1": 0.8,
              "beta2": 0.99, "grad_clip": 0.5, "seed": 7, "precision": "bf16",
              "log_every_steps": 10, "threads": 2, "checkpoint_every_tokens": 500000,
              "keep_checkpoints": 3, "keep_checkpoints_at": [1000000, 1500000]},
    "data": {"kind": "synthetic", "markov_branching": 4, "zipf_exponent": 1.3,
             "records_per_seq": 0.5, "key_len": 3, "value_len": 2, "key_alphabet": 16,
             "value_marker": false, "answer_marker": false, "absent_queries": 0.25,
             "min_distance": 16, "max_distance": 100, "seed": 3},
    "eval": {"every_tokens": 300000, "log_points": 0, "log_start": 0, "heldout_seqs": 8,
             "niah_lengths": [128, 256], "niah_depths": [0.0, 0.25, 1.0], "niah_samples": 8,
             "niah_records": 2, "niah_window": 32, "short_context": 16,
             "niah_variants": ["single", "multi-value", "multi-query"], "rh_min_samples": 8,
             "ablation_heads": 4, "ablation_draws": 7}})");
  json file = markov;
  file["model"].update(json::parse(R"({"arch": "swa", "pattern": "SSSFSSSF",
      "full_position": "last", "window": 16, "pos": "F:rope,S:nope", "logn_scaling": "all",
      "chunk_size": 64, "short_conv": "S", "short_conv_kernel": 4})"));
  file["data"].erase("markov_branching");
  file["data"].erase("zipf_exponent");
  file["data"].update(json::parse(R"({"background": "file", "path": "/d/train.bin",
      "dtype": "uint32", "vocab_size": 70000, "heldout_path": "/d/val.bin"})"));
  file["eval"].update(json::parse(R"({"every_tokens": 0, "log_points": 6, "log_start": 20000})"));
  json fraction = file;
  fraction["data"].erase("heldout_path");
  fraction["data"]["heldout_fraction"] = 0.05;
  return {markov, file, fraction};
}

TEST(CellConfigFieldsTest, EveryFieldIsReadAndWritten) {
  const json defaults = ParseOk(json::object()).ToJson();
  std::set<std::string> written;
  std::set<std::string> changed;  // fields some config sets to a value other than the default
  for (const json& config : EveryFieldConfigs()) {
    // A key the reader does not know is an error; one the writer leaves out or writes another
    // value for shows here.
    EXPECT_EQ(ParseOk(config).ToJson(), config);
    for (const char* section : {"model", "train", "data", "eval"}) {
      for (const auto& [key, value] : config[section].items()) {
        written.insert(std::string(section) + "." + key);
        if (!defaults[section].contains(key) || defaults[section][key] != value) {
          changed.insert(std::string(section) + "." + key);
        }
      }
    }
  }
  const std::vector<std::string>& fields = CellConfigFields();
  EXPECT_EQ(written, std::set<std::string>(fields.begin(), fields.end()));
  for (const std::string& field : fields) {
    if (field == "data.kind") continue;  // it has one value only
    EXPECT_TRUE(changed.count(field)) << field;
  }
}

TEST(CellConfigFieldsTest, EqualityComparesEveryFieldAsHeld) {
  for (const json& config : EveryFieldConfigs()) {
    const CellConfig c = ParseOk(config);
    CellConfig copy = c;
    EXPECT_TRUE(copy == c);
    EXPECT_TRUE(c != ParseOk(json::object()));
    copy.study = "another";
    EXPECT_TRUE(copy != c);
    copy = c;
    ASSERT_FALSE(copy.eval.niah_variants.empty());
    copy.eval.niah_variants.pop_back();
    EXPECT_TRUE(copy != c);
    copy = c;
    copy.model.vocab_size += 8;  // not a field, but part of the config
    EXPECT_TRUE(copy != c);
  }
  // As held: a derived 0 is not the value it resolves to, though both write the same.
  CellConfig derived = ParseOk(json::object());
  CellConfig resolved = derived;
  resolved.model.mlp_hidden = derived.model.resolved_mlp_hidden();
  EXPECT_EQ(resolved.CanonicalText(), derived.CanonicalText());
  EXPECT_TRUE(resolved != derived);
}

TEST(CellConfigFieldsTest, TheFieldListIsPinned) {
  // A study may vary these (coordinator/study/study_file.cc): removing one breaks study files.
  EXPECT_EQ(CellConfigFields(), (std::vector<std::string>{"model.arch",
                                                          "model.chunk_size",
                                                          "model.d_model",
                                                          "model.full_position",
                                                          "model.heads",
                                                          "model.init_std",
                                                          "model.kv_heads",
                                                          "model.layers",
                                                          "model.logn_scaling",
                                                          "model.mlp_hidden",
                                                          "model.pattern",
                                                          "model.pos",
                                                          "model.qk_norm",
                                                          "model.rope_base",
                                                          "model.seq_len",
                                                          "model.short_conv",
                                                          "model.short_conv_kernel",
                                                          "model.tie_embeddings",
                                                          "model.window",
                                                          "train.answer_loss_weight",
                                                          "train.batch_tokens",
                                                          "train.beta1",
                                                          "train.beta2",
                                                          "train.checkpoint_every_tokens",
                                                          "train.decay_fraction",
                                                          "train.decay_shape",
                                                          "train.grad_clip",
                                                          "train.keep_checkpoints",
                                                          "train.keep_checkpoints_at",
                                                          "train.log_every_steps",
                                                          "train.lr",
                                                          "train.micro_batch",
                                                          "train.min_lr_ratio",
                                                          "train.precision",
                                                          "train.schedule",
                                                          "train.seed",
                                                          "train.threads",
                                                          "train.tokens",
                                                          "train.warmup_tokens",
                                                          "train.weight_decay",
                                                          "data.absent_queries",
                                                          "data.answer_marker",
                                                          "data.background",
                                                          "data.dtype",
                                                          "data.heldout_fraction",
                                                          "data.heldout_path",
                                                          "data.key_alphabet",
                                                          "data.key_len",
                                                          "data.kind",
                                                          "data.markov_branching",
                                                          "data.max_distance",
                                                          "data.min_distance",
                                                          "data.path",
                                                          "data.records_per_seq",
                                                          "data.seed",
                                                          "data.value_len",
                                                          "data.value_marker",
                                                          "data.vocab_size",
                                                          "data.zipf_exponent",
                                                          "eval.ablation_draws",
                                                          "eval.ablation_heads",
                                                          "eval.every_tokens",
                                                          "eval.heldout_seqs",
                                                          "eval.log_points",
                                                          "eval.log_start",
                                                          "eval.niah_depths",
                                                          "eval.niah_lengths",
                                                          "eval.niah_records",
                                                          "eval.niah_samples",
                                                          "eval.niah_variants",
                                                          "eval.niah_window",
                                                          "eval.rh_min_samples",
                                                          "eval.short_context"}));
}

TEST(CellConfigTest, CanonicalJsonRoundTrips) {
  CellConfig a =
      ParseOk({{"model", {{"arch", "swa:1"}, {"window", 16}}}, {"train", {{"tokens", "1M"}}}});
  CellConfig b = ParseOk(a.ToJson());
  EXPECT_EQ(a.CanonicalText(), b.CanonicalText());
}

}  // namespace
}  // namespace onset::model

namespace onset::model {
namespace {

TEST(CellConfigDataTest, AFileBackgroundSetsTheVocabularyAndItsCanonicalKeys) {
  CellConfig c = ParseOk({{"data",
                           {{"background", "file"},
                            {"path", "/data/owt/train.bin"},
                            {"vocab_size", 50257},
                            {"heldout_path", "/data/owt/val.bin"}}}});
  EXPECT_EQ(c.data.text_tokens(), 50257);
  EXPECT_EQ(c.model.vocab_size, 50264);  // 50257 + 6 specials, padded to a multiple of 8
  const json j = c.ToJson();
  EXPECT_EQ(j["data"]["background"], "file");
  EXPECT_EQ(j["data"]["path"], "/data/owt/train.bin");
  EXPECT_EQ(j["data"]["dtype"], "uint16");
  EXPECT_EQ(j["data"]["heldout_path"], "/data/owt/val.bin");
  EXPECT_FALSE(j["data"].contains("heldout_fraction"));
  EXPECT_FALSE(j["data"].contains("markov_branching"));  // meaningless for a file
  // The canonical form parses back to itself.
  EXPECT_EQ(ParseOk(j).CanonicalText(), c.CanonicalText());

  CellConfig f = ParseOk({{"data", {{"background", "file"}, {"path", "t.bin"}}}});
  EXPECT_EQ(f.model.vocab_size, 264);  // the byte vocabulary of `onset-train prepare`
  EXPECT_EQ(f.ToJson()["data"]["heldout_fraction"], 0.01);
  EXPECT_EQ(ParseOk(f.ToJson()).CanonicalText(), f.CanonicalText());
}

TEST(CellConfigDataTest, MarkovCellsKeepTheirCanonicalForm) {
  // Token files added keys; a markov cell's canonical text (and so its address) is unchanged.
  CellConfig c = ParseOk(json::object());
  EXPECT_EQ(c.model.vocab_size, 264);
  const json data = c.ToJson()["data"];
  for (const char* key :
       {"background", "path", "dtype", "vocab_size", "heldout_path", "heldout_fraction"}) {
    EXPECT_FALSE(data.contains(key)) << key;
  }
  EXPECT_EQ(ParseOk({{"data", {{"background", "markov"}}}}).CanonicalText(), c.CanonicalText());
}

TEST(CellConfigDataTest, FileBackgroundErrorsNameTheKey) {
  EXPECT_EQ(ParseError({{"data", {{"background", "web"}}}}),
            "data.background: unknown background 'web': expected markov or file");
  EXPECT_EQ(ParseError({{"data", {{"path", "t.bin"}}}}),
            "data.path: applies only to data.background: file");
  EXPECT_EQ(ParseError({{"data", {{"background", "file"}}}}),
            "data.path: is required with data.background: file");
  EXPECT_EQ(ParseError({{"data", {{"background", "file"}, {"path", "t"}, {"dtype", "int8"}}}}),
            "data.dtype: unknown dtype 'int8': expected uint16 or uint32");
  EXPECT_EQ(ParseError({{"data", {{"background", "file"}, {"path", "t"}, {"vocab_size", 100000}}}}),
            "data.vocab_size: exceeds what uint16 tokens can hold (65536); use dtype uint32");
  EXPECT_EQ(ParseError({{"data", {{"background", "file"}, {"path", "t"}, {"zipf_exponent", 1.0}}}}),
            "data.zipf_exponent: applies only to data.background: markov");
  EXPECT_EQ(ParseError({{"data",
                         {{"background", "file"},
                          {"path", "t"},
                          {"heldout_path", "v"},
                          {"heldout_fraction", 0.1}}}}),
            "data.heldout_fraction: is set together with data.heldout_path; choose one");
  EXPECT_EQ(
      ParseError({{"data", {{"background", "file"}, {"path", "t"}, {"heldout_fraction", 0.0}}}}),
      "data.heldout_fraction: must be above 0 when there is no data.heldout_path");
}

}  // namespace
}  // namespace onset::model
