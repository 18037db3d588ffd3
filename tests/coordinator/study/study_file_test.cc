#include "coordinator/study/study_file.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cctype>
#include <fstream>
#include <map>
#include <sstream>

#include "common/study_text.h"
#include "tests/coordinator/study/sample_studies.h"

namespace onset::coordinator {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

struct BadFile {
  const char* what;
  const char* yaml;
  const char* expected_prefix;  // "file:line: key: problem..." up to a stable point
};

// Sections shared by the cases that need a valid model.
#define MODEL "model: {layers: 4, d_model: 32, heads: 2, seq_len: 64}\ntrain: {batch_tokens: 512}\n"

const BadFile kBadFiles[] = {
    {"unknown top-level key", "name: a\nfoo: 1\n", "s.yaml:2: foo: unknown key"},
    {"unknown key in a section", "name: a\ntrain:\n  lrr: 0.1\n",
     "s.yaml:3: train.lrr: unknown key (did you mean train.lr?)"},
    {"misspelt top-level key", "name: a\ngird: {}\n",
     "s.yaml:2: gird: unknown key (did you mean grid?)"},
    {"bad type", "name: a\ntrain:\n  batch_tokens: 512\n  lr: fast\n",
     "s.yaml:4: train.lr: must be a number"},
    {"bad arch in the grid", "name: a\n" MODEL "grid:\n  arch:\n    - full\n    - XYZ\n",
     "s.yaml:7: grid.arch: unknown arch 'XYZ'"},
    {"window missing for swa", "name: a\n" MODEL "grid:\n  arch:\n    - full\n    - swa\n",
     "s.yaml:7: model.window: is required (>= 1) for an arch with S layers"},
    {"window not an integer", "name: a\n" MODEL "grid:\n  arch: swa\n  window: [16, big]\n",
     "s.yaml:6: grid.window: must be an integer"},
    {"duplicate name", "name: a\nname: b\n", "s.yaml:2: name: duplicate key"},
    {"duplicate key in a section", "name: a\ntrain:\n  lr: 0.1\n  lr: 0.2\n",
     "s.yaml:4: train.lr: duplicate key"},
    {"invalid name", "name: a b\n", "s.yaml:1: name: 'a b' may use only"},
    {"name too long", "name: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n",
     "s.yaml:1: name: is 67 characters long"},
    {"name missing", "grid:\n  arch: full\n", "s.yaml:1: name: is required"},
    {"empty file", "", "s.yaml:1: name: is required"},
    {"bad token suffix", "name: a\n" MODEL "grid:\n  tokens:\n    - 1M\n    - 250X\n",
     "s.yaml:7: grid.tokens: must be a token count"},
    {"non-mapping section", "name: a\nmodel: 3\n", "s.yaml:2: model: must be a mapping"},
    {"non-mapping section (list)", "name: a\neval:\n  - 1\n", "s.yaml:2: eval: must be a mapping"},
    {"a field's bare name as an axis", "name: a\ngrid:\n  lr: [0.1]\n",
     "s.yaml:3: grid.lr: unknown axis (did you mean train.lr?)"},
    {"misspelt named axis", "name: a\ngrid:\n  windw: [16]\n",
     "s.yaml:3: grid.windw: unknown axis (did you mean window?)"},
    {"unknown grid axis", "name: a\ngrid:\n  xyzzy: [1]\n",
     "s.yaml:3: grid.xyzzy: unknown axis (expected arch, window, pos, tokens, seeds, zip"},
    {"misspelt field path", "name: a\ngrid:\n  train.lrr: [0.1]\n",
     "s.yaml:3: grid.train.lrr: unknown field (did you mean train.lr?)"},
    {"misspelt section in a path", "name: a\ngrid:\n  trian.lr: [0.1]\n",
     "s.yaml:3: grid.trian.lr: unknown field (did you mean train.lr?)"},
    {"unknown field path", "name: a\ngrid:\n  model.xyzzy: [1]\n",
     "s.yaml:3: grid.model.xyzzy: unknown field (fields are section.key"},
    {"field path out of range", "name: a\n" MODEL "grid:\n  train.lr: [0.1, 20]\n",
     "s.yaml:5: grid.train.lr: must be between 0.0 and 10.0 (value 20)"},
    {"field path axis also in its section",
     "name: a\ntrain:\n  lr: 0.1\ngrid:\n  train.lr: [0.2]\n",
     "s.yaml:3: train.lr: is also set by grid.train.lr (line 5)"},
    {"named axis also by its path", "name: a\ngrid:\n  arch: [full]\n  model.arch: [swa]\n",
     "s.yaml:4: grid.model.arch: sets model.arch, which grid.arch (line 3) sets too"},
    {"grid over the limit",
     "name: a\ngrid:\n  seeds: 10000\n  window: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]\n",
     "s.yaml:2: grid: expands to 110000 points, more than the limit of 100000"},
    {"zip lengths differ",
     "name: a\ngrid:\n  zip:\n    - {model.d_model: [32, 64], model.heads: [2]}\n",
     "s.yaml:4: grid.zip.model.heads: lists 1 value but grid.zip.model.d_model lists 2 values"},
    {"zip not a list of groups", "name: a\ngrid:\n  zip: 3\n",
     "s.yaml:3: grid.zip: must be a list"},
    {"zipped field also an axis",
     "name: a\ngrid:\n  model.heads: [2]\n  zip:\n    - {model.d_model: [32], model.heads: [2]}\n",
     "s.yaml:5: grid.zip.model.heads: sets model.heads, which grid.model.heads (line 3) sets too"},
    {"exclude names a value not on its axis",
     "name: a\n" MODEL "grid:\n  arch: [full, swa]\n  window: 16\nexclude:\n  - {arch: ful}\n",
     "s.yaml:8: exclude: arch 'ful' is not a value of grid.arch (did you mean full?)"},
    {"exclude names a field that is not an axis",
     "name: a\n" MODEL "grid:\n  arch: [full, swa]\n  window: 16\nexclude:\n  - {pos: rope}\n",
     "s.yaml:8: exclude: pos is not a grid axis"},
    {"exclude misspells an axis",
     "name: a\n" MODEL "grid:\n  arch: [full, swa]\n  window: 16\nexclude:\n  - {arhc: full}\n",
     "s.yaml:8: exclude: arhc is not a grid axis (did you mean arch?)"},
    {"exclude rule that matches nothing",
     "name: a\n" MODEL "grid:\n  zip:\n    - {train.beta1: [0.8, 0.9], train.beta2: [0.9, 0.99]}\n"
     "exclude:\n  - {train.beta1: 0.8, train.beta2: 0.99}\n",
     "s.yaml:8: exclude: this rule matches no grid point"},
    {"exclude drops everything", "name: a\ngrid:\n  arch: [full]\nexclude:\n  - {arch: full}\n",
     "s.yaml:4: exclude: drops every grid point"},
    {"exclude not a list", "name: a\ngrid:\n  arch: [full]\nexclude: {arch: full}\n",
     "s.yaml:4: exclude: must be a list of rules"},
    {"depends on a value not on the axis",
     "name: a\n" MODEL "grid:\n  arch: [full, swa]\n  window: 16\n"
     "depends:\n  train.lr: {by: arch, values: {ful: 1e-3}, default: 2e-3}\n",
     "s.yaml:8: depends.train.lr: arch 'ful' is not a value of grid.arch (did you mean full?)"},
    {"dependent field also an axis",
     "name: a\ngrid:\n  train.lr: [0.1]\ndepends:\n  train.lr: {by: train.lr, values: {0.1: "
     "0.2}}\n",
     "s.yaml:5: depends.train.lr: is also set by grid.train.lr (line 3)"},
    {"dependent field also in its section",
     "name: a\ntrain: {lr: 0.1}\ngrid:\n  arch: [full]\ndepends:\n  train.lr: {by: arch, values: "
     "{full: 0.2}}\n",
     "s.yaml:2: train.lr: is also set by depends.train.lr (line 6)"},
    {"dependent field without a value for a point",
     "name: a\n" MODEL "grid:\n  arch: [full, swa]\n  window: 16\n"
     "depends:\n  train.lr: {by: arch, values: {full: 1e-3}}\n",
     "s.yaml:8: depends.train.lr: has no value for model.arch = swa"},
    {"dependent value out of range",
     "name: a\n" MODEL "grid:\n  arch: [full, swa]\n  window: 16\n"
     "depends:\n  train.lr:\n    by: arch\n    values: {full: 1e-3, swa: fast}\n",
     "s.yaml:10: depends.train.lr: must be a number (value \"fast\")"},
    {"misspelt key in a dependent",
     "name: a\ngrid:\n  arch: [full]\ndepends:\n  train.lr: {by: arch, valeus: {full: 1}}\n",
     "s.yaml:5: depends.train.lr.valeus: unknown key (did you mean values?)"},
    {"dependent on a field that is not an axis",
     "name: a\ngrid:\n  arch: [full]\ndepends:\n  train.lr: {by: pos, values: {rope: 1}}\n",
     "s.yaml:5: depends.train.lr: pos is not a grid axis"},
    {"dependent without by",
     "name: a\ngrid:\n  arch: [full]\ndepends:\n  train.lr: {values: {full: 1}}\n",
     "s.yaml:5: depends.train.lr: needs by: the grid axis"},
    {"misspelt dependent field",
     "name: a\ngrid:\n  arch: [full]\ndepends:\n  train.lrr: {by: arch, values: {full: 1}}\n",
     "s.yaml:5: depends.train.lrr: unknown field (did you mean train.lr?)"},
    {"grid not a mapping", "name: a\ngrid: [full]\n", "s.yaml:2: grid: must be a mapping"},
    {"grid axis set twice", "name: a\nmodel:\n  window: 16\ngrid:\n  window: [16, 32]\n",
     "s.yaml:3: model.window: is also set by grid.window (line 5); set it in one place"},
    {"empty axis", "name: a\ngrid:\n  arch: []\n", "s.yaml:3: grid.arch: must list at least"},
    {"nested grid entry", "name: a\ngrid:\n  arch:\n    - [full]\n",
     "s.yaml:4: grid.arch: entries must be single values"},
    {"zero seeds", "name: a\ngrid:\n  seeds: 0\n", "s.yaml:3: grid.seeds: a seed count"},
    {"seeds not an integer", "name: a\n" MODEL "grid:\n  seeds: [0, x]\n",
     "s.yaml:5: grid.seeds: must be an integer"},
    {"invalid YAML", "name: a\ngrid: [full\n", "s.yaml:3: invalid YAML"},
    {"not a mapping", "- a\n- b\n", "s.yaml:1: a study file must be a mapping"},
    {"bad model value", "name: a\nmodel:\n  layers: 4\n  heads: 3\n",
     "s.yaml:4: model.heads: must divide d_model"},
    {"description not a string", "name: a\ndescription: [x]\n",
     "s.yaml:2: description: must be a string"},
    {"tags not a list", "name: a\ntags: x\n", "s.yaml:2: tags: must be a list of strings"},
    {"a tag not a string", "name: a\ntags:\n  - x\n  - [y]\n",
     "s.yaml:4: tags: every tag must be a non-empty string"},
    {"a tag with a space", "name: a\ntags: [ok, \"not ok\"]\n",
     "s.yaml:2: tags: 'not ok' may use only letters, digits"},
    {"a tag starting with a dash", "name: a\ntags: [-x]\n",
     "s.yaml:2: tags: '-x' may use only letters, digits"},

    {"misspelt resources", "name: a\nresource: {devices: 2}\n",
     "s.yaml:2: resource: unknown key (did you mean resources?)"},
    {"resources not a mapping", "name: a\nresources: 2\n",
     "s.yaml:2: resources: must be a mapping, e.g. {devices: 2}"},
    {"misspelt key in resources", "name: a\nresources:\n  device: 2\n",
     "s.yaml:3: resources.device: unknown key (did you mean devices?)"},
    {"unknown key in resources", "name: a\nresources: {gpus: 2}\n",
     "s.yaml:2: resources.gpus: unknown key (expected devices)"},
    {"zero devices", "name: a\nresources:\n  devices: 0\n",
     "s.yaml:3: resources.devices: must be a whole number of devices from 1 to 64, got '0'"},
    {"too many devices", "name: a\nresources: {devices: 65}\n",
     "s.yaml:2: resources.devices: must be a whole number of devices from 1 to 64, got '65'"},
    {"devices not a number", "name: a\nresources: {devices: two}\n",
     "s.yaml:2: resources.devices: must be a whole number of devices from 1 to 64, got 'two'"},
    {"fractional devices", "name: a\nresources: {devices: 1.5}\n",
     "s.yaml:2: resources.devices: must be a whole number of devices from 1 to 64, got '1.5'"},
    {"devices twice", "name: a\nresources: {devices: 2, devices: 4}\n",
     "s.yaml:2: resources.devices: duplicate key"},
    // YAML structure a study file does not use: refused before any node is built.
    {"anchor", "name: a\nmodel: &m {layers: 4}\n",
     "s.yaml:2: anchor &m: YAML anchors and aliases are not allowed in study files"},
    {"alias", "name: a\ndescription: x\ntrain:\n  lr: *x\n",
     "s.yaml:4: alias *x: YAML anchors and aliases are not allowed in study files"},
    {"merge key", "name: a\ntrain:\n  <<: *base\n",
     "s.yaml:3: alias *base: YAML anchors and aliases are not allowed"},
    {"second document", "name: a\n---\nname: b\n",
     "s.yaml:2: a study file is one YAML document; a second one starts here"},
    {"empty second document", "name: a\n---\n",
     "s.yaml:2: a study file is one YAML document; a second one starts here"},
    {"nesting too deep",
     "name: a\ndescription: "
     "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[x]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]\n",
     "s.yaml:2: nesting deeper than 16 levels"},
    {"not UTF-8", "name: a\ndescription: caf\xe9\n",
     "s.yaml:2: the file is not UTF-8 text (byte 0xe9 at offset 24)"},
    // Numbers that do not fit: refused where written, never rounded to infinity or 0.
    {"number too large", "name: a\ntrain: {lr: 1e400}\n",
     "s.yaml:2: train.lr: number '1e400' is out of range"},
    {"number too small", "name: a\ntrain:\n  lr: 1e-400\n",
     "s.yaml:3: train.lr: number '1e-400' is too small: it would read as 0"},
    {"denormal number", "name: a\ntrain:\n  weight_decay: 4e-320\n",
     "s.yaml:3: train.weight_decay: number '4e-320' is too small"},
    {"number too large in the grid", "name: a\n" MODEL "grid:\n  train.lr: [1e-3, -1e999]\n",
     "s.yaml:5: grid.train.lr: number '-1e999' is out of range"},
    {"integer too large", "name: a\nmodel:\n  layers: 99999999999999999999999\n",
     "s.yaml:3: model.layers: integer '99999999999999999999999' is out of range"},
    {"seed count too large", "name: a\ngrid:\n  seeds: 99999999999999999999999\n",
     "s.yaml:3: grid.seeds: integer '99999999999999999999999' is out of range"},
    {"token count with a suffix too large",
     "name: a\n" MODEL "grid:\n  tokens: [1M, "
     "1111111111111111111111111111111111111111111111111111111111111111111111111111111111111111"
     "1111111111111111111111111111111111111111111111111111111111111111111111111111111111111111"
     "1111111111111111111111111111111111111111111111111111111111111111111111111111111111111111"
     "1111111111111111111111111111111111111111111111111111111111111111111111111111111111111111"
     "111111111111111111111111111111111111111111111111K]\n",
     "s.yaml:5: grid.tokens: must be at most 1000000000000000 tokens (1e15)"},
    {"token budget over the limit", "name: a\ntrain:\n  tokens: 2000000000000000\n",
     "s.yaml:3: train.tokens: must be at most 1000000000000000 tokens (1e15)"},
    {"budget near INT64_MAX", "name: a\ntrain:\n  tokens: 9000000000000000000\n",
     "s.yaml:3: train.tokens: must be at most 1000000000000000 tokens (1e15)"},
    {"batch over the limit", "name: a\ntrain:\n  batch_tokens: 100B\n",
     "s.yaml:3: train.batch_tokens: must be at most 10000000000 tokens (1e10)"},
    {"eval cadence over the limit", "name: a\neval:\n  every_tokens: 9000000000000000000\n",
     "s.yaml:3: eval.every_tokens: must be at most 1000000000000000 tokens (1e15)"},
    {"zero learning rate", "name: a\ntrain: {lr: 0}\n", "s.yaml:2: train.lr: must be above 0"},
    {"zero learning rate in the grid", "name: a\n" MODEL "grid:\n  train.lr: [1e-3, 0.0]\n",
     "s.yaml:5: grid.train.lr: must be above 0"},
    // Names are directory names (checkpoints live under ROOT/STUDY/CELL).
    {"name a single dot", "name: .\n", "s.yaml:1: name: '.' must start with a letter or a digit"},
    {"name two dots", "name: ..\n", "s.yaml:1: name: '..' must start with a letter or a digit"},
    {"name with a leading dash", "name: -rf\n",
     "s.yaml:1: name: '-rf' must start with a letter or a digit"},
    {"name with a slash", "name: a/../../b\n", "s.yaml:1: name: 'a/../../b' may use only"},
    {"name with a control character", "name: \"a\\tb\"\n", "s.yaml:1: name: may use only"},
    {"name with NUL", "name: \"a\\0b\"\n", "s.yaml:1: name: may use only"},
    // A window that covers every context the cell sees makes its S layers F layers.
    {"window as long as the context",
     "name: a\n" MODEL "eval: {niah_samples: 0}\ngrid:\n  arch: swa\n  window: [16, 64]\n",
     "s.yaml:7: grid.window: 64 covers the longest context of the cell (64 tokens"},
    {"window as long as the longest NIAH prompt",
     "name: a\n" MODEL "eval: {niah_lengths: [48, 96]}\ngrid:\n  arch: swa\n  window: [64, 96]\n",
     "s.yaml:7: grid.window: 96 covers the longest context of the cell (96 tokens"},
    {"window in a section as long as the context",
     "name: a\nmodel: {layers: 4, d_model: 32, heads: 2, seq_len: 64, arch: swa, window: 200}\n"
     "train: {batch_tokens: 512}\neval: {niah_lengths: [48, 96]}\n",
     "s.yaml:2: model.window: 200 covers the longest context of the cell (96 tokens"},
    // Derived defaults the trainer would refuse: 2 seq_len as a NIAH length.
    {"seq_len whose default NIAH lengths are too long",
     "name: a\nmodel: {layers: 2, d_model: 32, heads: 2}\ntrain: {batch_tokens: 4M}\n"
     "grid:\n  model.seq_len: [64, 2200000]\n",
     "s.yaml:5: grid.model.seq_len: gives default eval.niah_lengths up to 4400000"},
};

class BadStudyFileTest : public ::testing::TestWithParam<BadFile> {};

TEST_P(BadStudyFileTest, NamesFileLineAndKey) {
  const BadFile& c = GetParam();
  absl::StatusOr<StudySpec> spec = ParseStudyFile("s.yaml", c.yaml);
  ASSERT_FALSE(spec.ok()) << c.what;
  EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument) << c.what;
  EXPECT_THAT(std::string(spec.status().message()), StartsWith(c.expected_prefix)) << c.what;
  RecordProperty("message", std::string(spec.status().message()));
}

INSTANTIATE_TEST_SUITE_P(Table, BadStudyFileTest, ::testing::ValuesIn(kBadFiles),
                         [](const ::testing::TestParamInfo<BadFile>& info) {
                           std::string name;
                           for (const char* c = info.param.what; *c; ++c) {
                             if (std::isalnum(static_cast<unsigned char>(*c))) name += *c;
                           }
                           return name;
                         });

TEST(StudyFileTest, ParsesASmallStudy) {
  absl::StatusOr<StudySpec> spec = ParseStudyFile("studies/small.yaml", testing::kSmallStudy);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->name, "small");
  EXPECT_EQ(spec->source_name, "studies/small.yaml");
  EXPECT_EQ(spec->source_yaml, testing::kSmallStudy);
  // seeds: 2 -> 0 and 1; full ignores the window: (1 + 2) archs x windows x 2 seeds.
  ASSERT_EQ(spec->cells.size(), 6u);
  EXPECT_EQ(spec->cells[0].axes.at("seed"), "0");
  EXPECT_EQ(spec->cells[0].axes.at("arch"), "full");
  EXPECT_EQ(spec->cells[5].axes.at("seed"), "1");
  EXPECT_EQ(spec->cells[5].axes.at("window"), "32");
  nlohmann::json config = nlohmann::json::parse(spec->cells[1].config_json);
  EXPECT_EQ(config["study"], "small");
  EXPECT_EQ(config["model"]["arch"], "swa");
  EXPECT_EQ(config["model"]["window"], 16);
  EXPECT_EQ(config["train"]["tokens"], 64'000);
}

TEST(StudyFileTest, TagsAreSortedWithoutDuplicatesAndBounded) {
  absl::StatusOr<StudySpec> spec =
      ParseStudyFile("s.yaml", std::string("description: words\ntags: [gpu, ablation, gpu, "
                                           "lab/2026:q4]\n") +
                                   testing::kSmallStudy);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->description, "words");
  EXPECT_EQ(spec->tags, (std::vector<std::string>{"ablation", "gpu", "lab/2026:q4"}));
  std::string many = "name: a\ntags: [";
  for (int i = 0; i < 33; ++i) many += (i ? ", t" : "t") + std::to_string(i);
  absl::StatusOr<StudySpec> too_many = ParseStudyFile("s.yaml", many + "]\n");
  EXPECT_THAT(std::string(too_many.status().message()),
              HasSubstr("s.yaml:2: tags: 33 tags; at most 32 are allowed"));
  absl::StatusOr<StudySpec> long_tag =
      ParseStudyFile("s.yaml", "name: a\ntags: [" + std::string(65, 't') + "]\n");
  EXPECT_THAT(std::string(long_tag.status().message()),
              HasSubstr("s.yaml:2: tags: a tag is 65 characters long; at most 64"));
  absl::StatusOr<StudySpec> long_description =
      ParseStudyFile("s.yaml", "name: a\ndescription: " + std::string(4097, 'd') + "\n");
  EXPECT_THAT(std::string(long_description.status().message()),
              HasSubstr("s.yaml:2: description: is 4097 bytes long; at most 4096"));
}

TEST(StudyFileTest, ResourcesSetTheDevicesOfEveryCellButNotItsAddress) {
  absl::StatusOr<StudySpec> plain = ParseStudyFile("s.yaml", testing::kSmallStudy);
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(plain->devices, 1);
  absl::StatusOr<StudySpec> spread =
      ParseStudyFile("s.yaml", std::string(testing::kSmallStudy) + "resources:\n  devices: 4\n");
  ASSERT_TRUE(spread.ok()) << spread.status();
  EXPECT_EQ(spread->devices, 4);
  // Data parallel trains the same model: the cells are the same cells.
  ASSERT_EQ(spread->cells.size(), plain->cells.size());
  for (size_t i = 0; i < plain->cells.size(); ++i) {
    EXPECT_EQ(spread->cells[i].id, plain->cells[i].id);
    EXPECT_EQ(spread->cells[i].config_json, plain->cells[i].config_json);
  }
  absl::StatusOr<StudySpec> empty =
      ParseStudyFile("s.yaml", std::string(testing::kSmallStudy) + "resources:\n");
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ(empty->devices, 1);
}

TEST(StudyFileTest, ShortContextIsTheStudysSmallestWindowForEveryCell) {
  // Without the study-wide value a full cell would use seq_len / 4 = 16 and an S cell its own.
  const std::string text =
      "name: a\nmodel: {layers: 4, d_model: 32, heads: 2, seq_len: 64}\n"
      "train: {batch_tokens: 512}\ngrid:\n  arch: [full, swa]\n  window: [40, 24]\n";
  absl::StatusOr<StudySpec> spec = ParseStudyFile("s.yaml", text);
  ASSERT_TRUE(spec.ok()) << spec.status();
  ASSERT_EQ(spec->cells.size(), 3u);
  for (const CellSpec& cell : spec->cells) {
    nlohmann::json config = nlohmann::json::parse(cell.config_json);
    EXPECT_EQ(config["eval"]["short_context"], 24) << cell.axes.at("arch");
  }
  // An explicit value wins.
  absl::StatusOr<StudySpec> explicit_spec =
      ParseStudyFile("s.yaml", text + "eval: {short_context: 8}\n");
  ASSERT_TRUE(explicit_spec.ok()) << explicit_spec.status();
  EXPECT_EQ(nlohmann::json::parse(explicit_spec->cells[0].config_json)["eval"]["short_context"], 8);
}

TEST(StudyFileTest, RelativeTokenFilesResolveAgainstTheStudyFilesDirectory) {
  const std::string text =
      "name: a\nmodel: {layers: 2, d_model: 32, heads: 2, seq_len: 64}\n"
      "train: {batch_tokens: 512}\n"
      "data: {background: file, path: corpus/train.bin, heldout_path: /abs/val.bin}\n";
  absl::StatusOr<StudySpec> spec = ParseStudyFile("studies/a.yaml", text, "/home/me/studies");
  ASSERT_TRUE(spec.ok()) << spec.status();
  nlohmann::json config = nlohmann::json::parse(spec->cells[0].config_json);
  EXPECT_EQ(config["data"]["path"], "/home/me/studies/corpus/train.bin");
  EXPECT_EQ(config["data"]["heldout_path"], "/abs/val.bin");
  EXPECT_EQ(config["model"].value("vocab_size", -1), -1);  // derived, never canonical
  // Without a base directory the paths stay as written.
  spec = ParseStudyFile("studies/a.yaml", text);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(nlohmann::json::parse(spec->cells[0].config_json)["data"]["path"], "corpus/train.bin");
}

TEST(StudyFileTest, ScalarAxesQuotedStringsAndDescription) {
  const char* yaml = R"yaml(name: s.1_x-y
description: one cell
model: {layers: 4, d_model: 32, heads: 2, seq_len: 64, pos: "nope-full"}
train: {batch_tokens: 512, tokens: "1.5M"}
grid:
  arch: swa
  window: 16
  seeds: [3]
)yaml";
  absl::StatusOr<StudySpec> spec = ParseStudyFile("s.yaml", yaml);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->description, "one cell");
  ASSERT_EQ(spec->cells.size(), 1u);
  EXPECT_EQ(spec->cells[0].axes.at("pos"), "nope-full");
  EXPECT_EQ(spec->cells[0].axes.at("seed"), "3");
  EXPECT_EQ(spec->cells[0].tokens_budget, 1'500'000);
}

TEST(StudyFileTest, QuotedNumberStaysAString) {
  // A quoted number is a string: token counts accept one, a plain number field does not.
  const char* yaml = "name: q\ntrain:\n  lr: \"0.1\"\n";
  absl::StatusOr<StudySpec> spec = ParseStudyFile("q.yaml", yaml);
  ASSERT_FALSE(spec.ok());
  EXPECT_THAT(std::string(spec.status().message()),
              StartsWith("q.yaml:3: train.lr: must be a number"));
}

// A study that uses every form of the grid.
constexpr const char* kDesignStudy = R"yaml(name: design
model: {layers: 4, seq_len: 64}
train: {batch_tokens: 512, tokens: 64K}
grid:
  arch: [full, swa]
  window: [16, 32]
  pos: [rope, nope]
  zip:
    - {model.d_model: [32, 64], model.heads: [2, 4]}
  train.weight_decay: [0.0, 0.1]
  seeds: 2
exclude:
  - {arch: full, pos: nope}
  - {window: 32, model.d_model: 32}
depends:
  train.lr: {by: arch, values: {full: 3e-3, swa: 1e-3}, default: 2e-3}
)yaml";

TEST(StudyFileTest, AnyFieldZipExcludeAndDepends) {
  absl::StatusOr<StudySpec> spec = ParseStudyFile("d.yaml", kDesignStudy);
  ASSERT_TRUE(spec.ok()) << spec.status();
  // Per seed and weight decay: full (window ignored): rope only, 2 widths = 2 cells; swa: 2
  // windows x 2 pos x 2 widths = 8, minus window 32 at width 32 (2) = 6. 8 x 2 x 2 = 32.
  ASSERT_EQ(spec->cells.size(), 32u);
  for (const CellSpec& c : spec->cells) {
    nlohmann::json config = nlohmann::json::parse(c.config_json);
    const std::string arch = c.axes.at("arch");
    EXPECT_FALSE(arch == "full" && c.axes.at("pos") == "nope") << c.id;
    EXPECT_FALSE(c.axes.at("window") == "32" && c.axes.at("model.d_model") == "32") << c.id;
    EXPECT_EQ(config["model"]["heads"], config["model"]["d_model"] == 32 ? 2 : 4) << c.id;
    EXPECT_EQ(config["train"]["lr"], arch == "full" ? 3e-3 : 1e-3) << c.id;
    // Every varied field is a display axis, besides the five named ones.
    for (const char* axis : {"arch", "window", "pos", "tokens", "seed", "model.d_model",
                             "model.heads", "train.weight_decay", "train.lr"}) {
      EXPECT_EQ(c.axes.count(axis), 1u) << axis;
    }
    EXPECT_EQ(c.axes.size(), 9u);
  }
  EXPECT_EQ(spec->cells.front().axes.at("train.lr"), "0.003");
}

TEST(StudyFileTest, SeedsOutermostThenTokensThenTheRestInFileOrder) {
  const char* yaml = R"yaml(name: order
model: {layers: 4, d_model: 32, heads: 2, seq_len: 64}
train: {batch_tokens: 512}
grid:
  train.lr: [1e-3, 2e-3]
  seeds: 2
  arch: [full, "swa:1"]
  window: 16
  tokens: [64K, 128K]
)yaml";
  absl::StatusOr<StudySpec> spec = ParseStudyFile("o.yaml", yaml);
  ASSERT_TRUE(spec.ok()) << spec.status();
  ASSERT_EQ(spec->cells.size(), 16u);
  std::vector<std::string> first_four;
  for (int i = 0; i < 4; ++i) {
    const CellSpec& c = spec->cells[i];
    first_four.push_back(c.axes.at("seed") + " " + c.axes.at("tokens") + " " +
                         c.axes.at("train.lr") + " " + c.axes.at("arch"));
  }
  EXPECT_EQ(first_four, (std::vector<std::string>{"0 64000 0.001 full", "0 64000 0.001 swa:1",
                                                  "0 64000 0.002 full", "0 64000 0.002 swa:1"}));
  EXPECT_EQ(spec->cells[4].axes.at("tokens"), "128000");
  EXPECT_EQ(spec->cells[8].axes.at("seed"), "1");
}

TEST(StudyFileTest, SeedsZipWithTheDataSeedAndAxesMayBeNamedByPath) {
  const char* yaml = R"yaml(name: zs
model: {layers: 4, d_model: 32, heads: 2, seq_len: 64}
train: {batch_tokens: 512}
grid:
  model.arch: [full]
  zip: {seeds: 3, data.seed: [10, 11, 12]}
)yaml";
  absl::StatusOr<StudySpec> spec = ParseStudyFile("z.yaml", yaml);
  ASSERT_TRUE(spec.ok()) << spec.status();
  ASSERT_EQ(spec->cells.size(), 3u);
  EXPECT_EQ(spec->cells[2].axes.at("seed"), "2");
  EXPECT_EQ(spec->cells[2].axes.at("data.seed"), "12");
  EXPECT_EQ(spec->cells[2].axes.count("model.arch"), 0u);  // shown as arch
}

TEST(StudyFileTest, DependentWindowsAndListValues) {
  const char* yaml = R"yaml(name: dw
model: {layers: 4, d_model: 32, heads: 2}
train: {batch_tokens: 512}
grid:
  arch: [full, swa]
  model.seq_len: [64, 128]
depends:
  window: {by: model.seq_len, values: {64: 16, 128: 32}}
  eval.niah_lengths: {by: model.seq_len, values: {64: [48, 64], 128: [96, 128]}}
)yaml";
  absl::StatusOr<StudySpec> spec = ParseStudyFile("w.yaml", yaml);
  ASSERT_TRUE(spec.ok()) << spec.status();
  ASSERT_EQ(spec->cells.size(), 4u);
  for (const CellSpec& c : spec->cells) {
    nlohmann::json config = nlohmann::json::parse(c.config_json);
    const int seq_len = config["model"]["seq_len"];
    if (c.axes.at("arch") == "swa") {
      EXPECT_EQ(config["model"]["window"], seq_len / 4);
    }
    EXPECT_EQ(config["eval"]["niah_lengths"], (std::vector<int>{seq_len * 3 / 4, seq_len}));
    EXPECT_EQ(config["eval"]["short_context"], 16);  // the smallest window of the study
  }
}

TEST(StudyFileTest, LimitsOnAxesAndValues) {
  std::string yaml = "name: many\ngrid:\n";
  const std::vector<std::string>& fields = model::CellConfigFields();
  for (size_t i = 0; i < 33; ++i) yaml += "  " + fields[i] + ": [1]\n";
  absl::StatusOr<StudySpec> spec = ParseStudyFile("m.yaml", yaml);
  ASSERT_FALSE(spec.ok());
  EXPECT_THAT(std::string(spec.status().message()),
              HasSubstr("is one axis too many: a grid has at most 32"));

  yaml = "name: long\ngrid:\n  train.seed: [";
  for (int i = 0; i <= 10'000; ++i) yaml += std::to_string(i) + ", ";
  yaml += "0]\n";
  spec = ParseStudyFile("l.yaml", yaml);
  ASSERT_FALSE(spec.ok());
  EXPECT_THAT(std::string(spec.status().message()),
              StartsWith("l.yaml:3: grid.train.seed: lists 10002 values; at most 10000"));

  yaml = "name: rules\ngrid:\n  seeds: 200\nexclude:\n";
  for (int i = 0; i < 101; ++i) yaml += "  - {seeds: " + std::to_string(i) + "}\n";
  spec = ParseStudyFile("r.yaml", yaml);
  ASSERT_FALSE(spec.ok());
  EXPECT_THAT(std::string(spec.status().message()),
              StartsWith("r.yaml:4: exclude: lists 101 rules; at most 100 are allowed"));
}

TEST(StudyFileTest, ExampleStudiesInTheRepositoryParse) {
  const std::map<std::string, size_t> kCells = {{"studies/demo.yaml", 9},
                                                {"studies/findings-cpu.yaml", 33},
                                                {"studies/paper-gpu.yaml", 324},
                                                {"studies/wsd-budgets.yaml", 8}};
  for (const auto& [file, cells] : kCells) {
    std::ifstream in(std::string(ONSET_SOURCE_DIR) + "/" + file);
    ASSERT_TRUE(in.good()) << file;
    std::stringstream text;
    text << in.rdbuf();
    absl::StatusOr<StudySpec> spec = ParseStudyFile(file, text.str());
    ASSERT_TRUE(spec.ok()) << spec.status();
    EXPECT_EQ(spec->cells.size(), cells) << file;
  }
}

// "Billion laughs": 613 bytes whose aliases expand to 9^9 scalars. Refused at the first anchor,
// before any alias is expanded.
constexpr const char* kBillionLaughs = R"yaml(name: lol
description: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]
grid: {seeds: *i}
)yaml";

TEST(StudyFileTest, AliasesAreRefusedBeforeTheyExpand) {
  absl::StatusOr<StudySpec> spec = ParseStudyFile("lol.yaml", kBillionLaughs);
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(spec.status().message()),
              StartsWith("lol.yaml:2: anchor &a: YAML anchors and aliases are not allowed in "
                         "study files; write each value out"));
}

TEST(StudyFileTest, TextThatIsNotAStudyFileIsRefusedWithItsPlace) {
  // A NUL byte: binary, not text.
  const std::string with_nul = std::string("name: a\ndescription: x\n") + '\0' + "\n";
  absl::StatusOr<StudySpec> spec = ParseStudyFile("s.yaml", with_nul);
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().message(), "s.yaml:3: the file is not text: a NUL byte at offset 23");
  // Over the size limit: refused before YAML sees it.
  const std::string big =
      "name: a\ndescription: " + std::string(common::kMaxStudyFileBytes, 'x') + "\n";
  spec = ParseStudyFile("s.yaml", big);
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().message(), "s.yaml:1: the file is " + std::to_string(big.size()) +
                                         " bytes; a study file is at most 1048576 bytes (1 MiB)");
  // A truncated UTF-8 sequence at the end.
  spec = ParseStudyFile("s.yaml", "name: a\n\n\ndescription: \xe2\x82");
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().message(),
            "s.yaml:4: the file is not UTF-8 text (byte 0xe2 at offset 23)");
}

TEST(StudyFileTest, CellErrorsNameTheCellsAxisValues) {
  const char* yaml = R"yaml(name: a
model: {layers: 4, d_model: 32, heads: 2, seq_len: 64}
train: {batch_tokens: 512}
grid:
  arch: [full, swa]
  window: 16
  train.lr: [1e-3, 20]
)yaml";
  absl::StatusOr<StudySpec> spec = ParseStudyFile("s.yaml", yaml);
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().message(),
            "s.yaml:7: grid.train.lr: must be between 0.0 and 10.0 (value 20); cell arch=full "
            "window=16 train.lr=20");
}

TEST(StudyFileTest, TheStudiesCellIdsAreUnchanged) {
  // A cell's id is the hash of its canonical config: stored results belong to these ids.
  // (tests/model/config/testdata/cell_config_golden.txt pins every grid point's config.)
  // The old studies' grid points (demo.yaml's four cells, retrieval-cpu.yaml) are pinned by the
  // golden file's study cases, which still read to the same ids.
  const std::map<std::string, std::vector<std::string>> ids = {
      {"studies/demo.yaml",
       {"fc4d7eeb667c146e", "e47d3de85ef81fef", "510674a70b71bdc6", "76c0fdbbd02662b9",
        "d306d4be437d7255", "9eb8f0692328241a", "7c543f255ebcb27f", "609dcffbc2ca876c",
        "564d80fbba516e0d"}},
      {"studies/findings-cpu.yaml",
       {"cbe742ce0e09fc8a", "8968c3a33f84fdce", "9508790e8e581046", "9b3ecb015e766871",
        "cadb3b66ae83e341", "2e393947ffb69b7e", "58cbf6cf10180dec", "74dafa5e79c9152e",
        "4f6c04bb2882953c", "f267ea2309beb26e", "662b2234c1cbe01a", "091574655a42a39e",
        "0b148d263759357d", "0720c6f78ff52293", "877d7ae0c04025b7", "9e1e2baab07a76a2",
        "4400e6c6f0ceb7ff", "da316a108aeb7ab5", "4810aa11ed068558", "00281208e2183156",
        "b3c2661aa24e1bcb", "f24668ef77e288b4", "5802910ce09862fe", "34093a74341509ed",
        "cc56874c5dcf29f9", "593b0d50c9e70b1b", "ca163a73c10ff8c3", "4639c7a02e712a57",
        "a037f47f2e7b7bf7", "bf287ddd66bc1031", "25c6f6ad6538c524", "db77b7232c2a197a",
        "834115613db8bf27"}}};
  for (const auto& [file, expected] : ids) {
    std::ifstream in(std::string(ONSET_SOURCE_DIR) + "/" + file);
    std::stringstream text;
    text << in.rdbuf();
    absl::StatusOr<StudySpec> spec = ParseStudyFile(file, text.str());
    ASSERT_TRUE(spec.ok()) << spec.status();
    std::vector<std::string> got;
    for (const CellSpec& cell : spec->cells) got.push_back(cell.id);
    EXPECT_EQ(got, expected) << file;
  }
}

TEST(StudyFileTest, EveryCellsResolvedConfigParsesToItselfAsTheTrainerReadsIt) {
  // What a worker hands onset-train is the canonical config; it must read back unchanged.
  std::vector<std::pair<std::string, std::string>> studies;
  for (const char* file : {"studies/demo.yaml", "studies/findings-cpu.yaml",
                           "studies/paper-gpu.yaml", "studies/wsd-budgets.yaml"}) {
    std::ifstream in(std::string(ONSET_SOURCE_DIR) + "/" + file);
    std::stringstream text;
    text << in.rdbuf();
    studies.emplace_back(file, text.str());
  }
  // Without NIAH the canonical form still lists the default lengths (8, 16, 32 here).
  studies.emplace_back("tiny.yaml",
                       "name: tiny\nmodel: {layers: 1, d_model: 16, heads: 2, seq_len: 16}\n"
                       "train: {tokens: 1M, batch_tokens: 512}\neval: {niah_samples: 0}\n");
  // The longest model: its default NIAH lengths are off, and so are they without NIAH.
  studies.emplace_back("long.yaml",
                       "name: long\nmodel: {layers: 1, d_model: 16, heads: 2, seq_len: 4194304}\n"
                       "train: {tokens: 100M, batch_tokens: 8M}\neval: {niah_samples: 0}\n");
  for (const auto& [file, text] : studies) {
    absl::StatusOr<StudySpec> spec = ParseStudyFile(file, text);
    ASSERT_TRUE(spec.ok()) << spec.status();
    for (const CellSpec& cell : spec->cells) {
      model::CellConfig config;
      std::optional<model::FieldError> e =
          model::ParseCellConfig(nlohmann::json::parse(cell.config_json), &config);
      ASSERT_FALSE(e) << file << ": " << e->ToString();
      EXPECT_EQ(config.CanonicalText(), cell.config_json) << file;
    }
  }
}

TEST(StudyFileTest, NumbersAtTheEdgesOfTheirRangesAreKept) {
  const char* yaml = R"yaml(name: edges
model: {layers: 4, d_model: 32, heads: 2, seq_len: 64}
train: {batch_tokens: 512, tokens: 1e15, lr: 2.3e-308, weight_decay: 1e-300}
)yaml";
  absl::StatusOr<StudySpec> spec = ParseStudyFile("e.yaml", yaml);
  ASSERT_TRUE(spec.ok()) << spec.status();
  nlohmann::json config = nlohmann::json::parse(spec->cells[0].config_json);
  EXPECT_EQ(config["train"]["tokens"], 1'000'000'000'000'000);
  EXPECT_EQ(config["train"]["lr"], 2.3e-308);
}

}  // namespace
}  // namespace onset::coordinator
