#include "coordinator/study_file.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cctype>
#include <fstream>
#include <map>
#include <sstream>

#include "tests/coordinator/test_util.h"

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
     "s.yaml:3: train.lrr: unknown key"},
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
    {"unknown grid axis", "name: a\ngrid:\n  lr: [0.1]\n", "s.yaml:3: grid.lr: unknown axis"},
    {"grid not a mapping", "name: a\ngrid: [full]\n", "s.yaml:2: grid: must be a mapping"},
    {"grid axis set twice", "name: a\nmodel:\n  window: 16\ngrid:\n  window: [16, 32]\n",
     "s.yaml:3: model.window: is also set by grid.window (line 5)"},
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
  EXPECT_EQ(nlohmann::json::parse(explicit_spec->cells[0].config_json)["eval"]["short_context"],
            8);
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
  EXPECT_THAT(std::string(spec.status().message()), StartsWith("q.yaml:3: train.lr: must be a number"));
}

TEST(StudyFileTest, ExampleStudiesInTheRepositoryParse) {
  const std::map<std::string, size_t> kCells = {{"studies/demo.yaml", 6},
                                                {"studies/hybrid-design.yaml", 48},
                                                {"studies/retrieval-cpu.yaml", 8}};
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

}  // namespace
}  // namespace onset::coordinator
