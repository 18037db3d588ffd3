#include "coordinator/study/grid.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

#include "coordinator/study/study_file.h"
#include "tests/coordinator/study/sample_studies.h"
#include "tests/testing/pinned_cell.h"

namespace onset::coordinator {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;

GridAxis Axis(const std::string& path, std::vector<json> values) {
  GridAxis axis{{path}, {}};
  for (json& v : values) axis.values.push_back({std::move(v)});
  return axis;
}

// Seeds outermost, pos innermost, as a study file orders them.
Grid FullGrid() {
  Grid grid;
  grid.axes = {Axis("train.seed", {0, 1, 2}), Axis("train.tokens", {"250K", 1'000'000}),
               Axis("model.arch", {"full", "swa"}), Axis("model.window", {32, 64}),
               Axis("model.pos", {"rope", "nope-full"})};
  return grid;
}

json Base() {
  return json{{"study", "g"},
              {"model", {{"layers", 4}, {"d_model", 32}, {"heads", 2}, {"seq_len", 64}}},
              {"train", {{"batch_tokens", 512}}}};
}

TEST(GridTest, CartesianProductHasEveryPointOnceInStableOrder) {
  Grid grid = FullGrid();
  EXPECT_EQ(grid.Size(), 48);
  std::vector<GridPoint> points = CartesianProduct(grid);
  ASSERT_EQ(points.size(), 48u);
  EXPECT_EQ(std::set<GridPoint>(points.begin(), points.end()).size(), 48u);
  // Seed outermost, pos innermost.
  EXPECT_EQ(points[0], (GridPoint{0, 0, 0, 0, 0}));
  EXPECT_EQ(points[1], (GridPoint{0, 0, 0, 0, 1}));
  EXPECT_EQ(points[2], (GridPoint{0, 0, 0, 1, 0}));
  EXPECT_EQ(points[47], (GridPoint{2, 1, 1, 1, 1}));
}

TEST(GridTest, NoAxesIsOnePoint) {
  Grid grid;
  grid.axes = {Axis("model.arch", {"full", "swa"})};
  std::vector<GridPoint> points = CartesianProduct(grid);
  ASSERT_EQ(points.size(), 2u);
  EXPECT_EQ(points[1], (GridPoint{1}));
  EXPECT_EQ(CartesianProduct(Grid()).size(), 1u);
  EXPECT_EQ(Grid().Size(), 1);
}

TEST(GridTest, WindowDoesNotMultiplyFullAttentionCells) {
  absl::StatusOr<std::vector<CellSpec>> cells = ExpandGrid(Base(), FullGrid());
  ASSERT_TRUE(cells.ok()) << cells.status();
  // full: 2 pos x 2 tokens x 3 seeds = 12; swa: 2 windows x 12 = 24.
  ASSERT_EQ(cells->size(), 36u);
  int full = 0;
  std::set<std::string> ids;
  for (const CellSpec& c : *cells) {
    ids.insert(c.id);
    EXPECT_EQ(c.id.size(), 16u);
    if (c.axes.at("arch") == "full") {
      ++full;
      EXPECT_EQ(c.axes.at("window"), "-");
      EXPECT_EQ(json::parse(c.config_json)["model"]["window"], 0);
    } else {
      EXPECT_THAT(c.axes.at("window"), ::testing::AnyOf("32", "64"));
    }
  }
  EXPECT_EQ(full, 12);
  EXPECT_EQ(ids.size(), 36u);
}

TEST(GridTest, AxesAreShownAsResolvedValues) {
  Grid grid;
  grid.axes = {Axis("train.seed", {7}), Axis("train.tokens", {"250K"}), Axis("model.arch", {"swa"}),
               Axis("model.window", {16})};
  absl::StatusOr<std::vector<CellSpec>> cells = ExpandGrid(Base(), grid);
  ASSERT_TRUE(cells.ok()) << cells.status();
  ASSERT_EQ(cells->size(), 1u);
  const CellSpec& c = cells->front();
  EXPECT_EQ(c.axes, (std::map<std::string, std::string>{{"arch", "swa"},
                                                        {"window", "16"},
                                                        {"pos", "rope"},
                                                        {"tokens", "250000"},
                                                        {"seed", "7"}}));
  EXPECT_EQ(c.tokens_budget, 250'000);
  model::CellConfig parsed;
  ASSERT_FALSE(model::ParseCellConfig(json::parse(c.config_json), &parsed).has_value());
  EXPECT_EQ(CellId(parsed), c.id);  // the canonical text round-trips to the same id
}

// The same id as the trainer's export gives the same config
// (tests/model/export/safetensors_writer_test.cc).
TEST(GridTest, TheCellIdOfThePinnedConfigIsThePinnedOne) {
  model::CellConfig config;
  ASSERT_FALSE(model::ParseCellConfig(json::parse(testutil::kPinnedCellConfig), &config));
  EXPECT_EQ(CellId(config), testutil::kPinnedCellId);
  EXPECT_EQ(MakeCellSpec(config).id, testutil::kPinnedCellId);
}

// The cell a display point landed on, by its display axes; a test failure if none.
const CellSpec* Find(const std::vector<CellSpec>& cells,
                     const std::map<std::string, std::string>& want) {
  for (const CellSpec& c : cells) {
    bool match = true;
    for (const auto& [k, v] : want) match = match && c.axes.at(k) == v;
    if (match) return &c;
  }
  ADD_FAILURE() << "no cell " << json(want).dump();
  return nullptr;
}

TEST(GridTest, MergedSchemesRecordTheValuesTheyStandFor) {
  Grid grid;
  grid.axes = {Axis("train.tokens", {"1M"}), Axis("model.arch", {"full", "swa", "lightning:0"}),
               Axis("model.window", {16, 64}), Axis("model.pos", {"rope", "nope-full", "nope"})};
  absl::StatusOr<std::vector<CellSpec>> cells = ExpandGrid(Base(), grid);
  ASSERT_TRUE(cells.ok()) << cells.status();
  // full: rope and nope (nope-full is nope: no S layer keeps RoPE); swa: 2 windows x 3 schemes;
  // lightning:0 (LLLL): one cell, no attention layer uses RoPE under any scheme.
  EXPECT_EQ(cells->size(), 2u + 6u + 1u);

  const CellSpec* full_nope = Find(*cells, {{"arch", "full"}, {"pos", "nope"}});
  ASSERT_NE(full_nope, nullptr);
  EXPECT_EQ(full_nope->axis_aliases, (std::map<std::string, std::vector<std::string>>{
                                         {"pos", {"nope-full"}}, {"window", {"16", "64"}}}));
  const CellSpec* full_rope = Find(*cells, {{"arch", "full"}, {"pos", "rope"}});
  ASSERT_NE(full_rope, nullptr);
  EXPECT_EQ(full_rope->axis_aliases.count("pos"), 0u);  // nothing else is full rope
  EXPECT_THAT(full_rope->axis_aliases.at("window"), ElementsAre("16", "64"));
  // A model that every scheme gives alike stands for all of them; "1M" is just how 1000000 is
  // written, not another value.
  const CellSpec* linear = Find(*cells, {{"arch", "lightning:0"}});
  ASSERT_NE(linear, nullptr);
  EXPECT_EQ(linear->axes.at("pos"), "rope");
  EXPECT_THAT(linear->axis_aliases.at("pos"), ElementsAre("nope-full", "nope"));
  EXPECT_EQ(linear->axis_aliases.count("tokens"), 0u);
  // Cells nothing merged into have none.
  const CellSpec* swa = Find(*cells, {{"arch", "swa"}, {"window", "16"}, {"pos", "nope-full"}});
  ASSERT_NE(swa, nullptr);
  EXPECT_TRUE(swa->axis_aliases.empty());
}

TEST(GridTest, IdsAreStableAcrossRunsAndKeyOrder) {
  absl::StatusOr<std::vector<CellSpec>> a = ExpandGrid(Base(), FullGrid());
  absl::StatusOr<std::vector<CellSpec>> b = ExpandGrid(Base(), FullGrid());
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ(a->size(), b->size());
  for (size_t i = 0; i < a->size(); ++i) EXPECT_EQ((*a)[i].id, (*b)[i].id);

  // The same study written with its keys (and equivalent values) in another order.
  const char* one = R"yaml(name: k
model: {layers: 4, d_model: 32, heads: 2, seq_len: 64}
train: {batch_tokens: 512, lr: 0.003}
grid: {arch: [swa], window: 16, tokens: 250K, seeds: 1}
)yaml";
  const char* two = R"yaml(grid:
  seeds: [0]
  tokens: [250000]
  window: [16]
  arch: swa
train:
  lr: 3.0e-3
  batch_tokens: 512
model:
  seq_len: 64
  heads: 2
  d_model: 32
  layers: 4
name: k
)yaml";
  absl::StatusOr<StudySpec> x = ParseStudyFile("one.yaml", one);
  absl::StatusOr<StudySpec> y = ParseStudyFile("two.yaml", two);
  ASSERT_TRUE(x.ok()) << x.status();
  ASSERT_TRUE(y.ok()) << y.status();
  ASSERT_EQ(x->cells.size(), 1u);
  ASSERT_EQ(y->cells.size(), 1u);
  EXPECT_EQ(x->cells[0].id, y->cells[0].id);
  EXPECT_EQ(x->cells[0].config_json, y->cells[0].config_json);
}

TEST(GridTest, DifferentStudiesGiveDifferentIds) {
  json other = Base();
  other["study"] = "other";
  absl::StatusOr<std::vector<CellSpec>> a = ExpandGrid(Base(), Grid());
  absl::StatusOr<std::vector<CellSpec>> b = ExpandGrid(other, Grid());
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE(a->front().id, b->front().id);
}

TEST(GridTest, ReportsTheFirstBadCell) {
  Grid grid;
  grid.axes = {Axis("model.arch", {"full", "XYZ"})};
  absl::StatusOr<std::vector<CellSpec>> cells = ExpandGrid(Base(), grid);
  ASSERT_FALSE(cells.ok());
  EXPECT_EQ(cells.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(cells.status().message()),
              ::testing::StartsWith("model.arch: unknown arch 'XYZ'"));
}

TEST(GridTest, RefusesAGridOverTheLimit) {
  Grid grid;
  grid.axes = {Axis("train.seed", {}), Axis("model.window", {})};
  for (int i = 0; i < 400; ++i) {
    grid.axes[0].values.push_back({i});
    grid.axes[1].values.push_back({i + 1});
  }
  absl::StatusOr<std::vector<CellSpec>> cells = ExpandGrid(Base(), grid);
  EXPECT_EQ(cells.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(GridTest, AnyFieldIsAnAxisAndIsShownByItsPath) {
  Grid grid;
  grid.axes = {Axis("model.arch", {"full"}), Axis("train.lr", {1e-3, 3e-3})};
  absl::StatusOr<std::vector<CellSpec>> cells = ExpandGrid(Base(), grid);
  ASSERT_TRUE(cells.ok()) << cells.status();
  ASSERT_EQ(cells->size(), 2u);
  EXPECT_EQ((*cells)[0].axes.at("train.lr"), "0.001");
  EXPECT_EQ((*cells)[1].axes.at("train.lr"), "0.003");
  EXPECT_EQ((*cells)[1].axes.at("arch"), "full");  // the five named axes are always there
  EXPECT_EQ((*cells)[1].axes.at("seed"), "0");
  EXPECT_EQ((*cells)[1].axes.size(), 6u);
  EXPECT_EQ(json::parse((*cells)[0].config_json)["train"]["lr"], 1e-3);
}

TEST(GridTest, AZipAxisSetsItsFieldsTogether) {
  Grid grid;
  grid.axes = {GridAxis{{"model.d_model", "model.heads"}, {{32, 2}, {64, 4}}}};
  EXPECT_EQ(grid.Size(), 2);
  absl::StatusOr<std::vector<CellSpec>> cells = ExpandGrid(Base(), grid);
  ASSERT_TRUE(cells.ok()) << cells.status();
  ASSERT_EQ(cells->size(), 2u);
  EXPECT_EQ((*cells)[1].axes.at("model.d_model"), "64");
  EXPECT_EQ((*cells)[1].axes.at("model.heads"), "4");
}

TEST(GridTest, ExcludedPointsMakeNoCell) {
  Grid grid = FullGrid();
  // Every full-attention cell with NoPE in F layers, and swa at window 64 with 250K tokens.
  grid.exclude = {ExcludeRule{{{"model.arch", {"full"}}, {"model.pos", {"nope-full"}}}},
                  ExcludeRule{{{"model.window", {64}}, {"train.tokens", {250'000}}}}};
  GridPoint p = {0, 0, 0, 0, 1};  // seed 0, 250K, full, 32, nope-full
  EXPECT_EQ(MatchingExcludeRule(grid, p), 0);
  EXPECT_TRUE(RuleMatches(grid, 0, p));
  EXPECT_FALSE(RuleMatches(grid, 1, p));
  EXPECT_EQ(MatchingExcludeRule(grid, {0, 0, 1, 1, 0}), 1);  // "250K" is 250000
  EXPECT_EQ(MatchingExcludeRule(grid, {0, 1, 1, 1, 0}), -1);
  absl::StatusOr<std::vector<CellSpec>> cells = ExpandGrid(Base(), grid);
  ASSERT_TRUE(cells.ok()) << cells.status();
  // Without rules 36 cells (see above); minus full x nope-full (6) and swa x 64 x 250K (6).
  EXPECT_EQ(cells->size(), 24u);
  for (const CellSpec& c : *cells) {
    EXPECT_FALSE(c.axes.at("arch") == "full" && c.axes.at("pos") == "nope") << c.id;
  }
}

TEST(GridTest, DependentFieldsFollowTheirAxis) {
  Grid grid;
  grid.axes = {Axis("model.arch", {"full", "swa", "lightning"}), Axis("model.window", {16})};
  grid.depends = {DependentField{"train.lr", "model.arch", {{"full", 3e-3}, {"swa", 1e-3}}, 2e-3}};
  absl::StatusOr<std::vector<CellSpec>> cells = ExpandGrid(Base(), grid);
  ASSERT_TRUE(cells.ok()) << cells.status();
  ASSERT_EQ(cells->size(), 3u);
  EXPECT_EQ((*cells)[0].axes.at("train.lr"), "0.003");
  EXPECT_EQ((*cells)[1].axes.at("train.lr"), "0.001");
  EXPECT_EQ((*cells)[2].axes.at("train.lr"), "0.002");  // the fallback

  grid.depends[0].fallback.reset();
  cells = ExpandGrid(Base(), grid);
  ASSERT_FALSE(cells.ok());
  EXPECT_THAT(std::string(cells.status().message()),
              ::testing::StartsWith("train.lr: has no value for model.arch = lightning"));
}

TEST(GridTest, SubmittedCellsAreCheckedAsTheTrainerReadsThem) {
  model::CellConfig config;
  ASSERT_FALSE(model::ParseCellConfig(json::object(), &config));
  EXPECT_FALSE(CheckSubmittedCell(config, config.CanonicalText()));
  // A canonical config that onset-train would refuse is refused, in the trainer's words.
  json canonical = config.ToJson();
  canonical["eval"]["niah_lengths"] = {8};
  std::optional<model::FieldError> e = CheckSubmittedCell(config, canonical.dump());
  ASSERT_TRUE(e);
  EXPECT_EQ(e->ToString(),
            "eval.niah_lengths: every entry must be between 16 and 4194304 (in the resolved "
            "config onset-train reads)");
}

TEST(GridTest, AWindowMustBeShorterThanTheLongestContext) {
  // seq_len 256 and NIAH prompts up to 512 (the defaults that hold the records: 256, 512).
  auto check = [](int window, json eval) {
    model::CellConfig config;
    EXPECT_FALSE(model::ParseCellConfig(
        {{"model", {{"arch", "swa"}, {"window", window}, {"seq_len", 256}}}, {"eval", eval}},
        &config));
    EXPECT_EQ(LongestContext(config), eval.empty() ? 512 : 256);
    return CheckSubmittedCell(config, config.CanonicalText());
  };
  EXPECT_FALSE(check(511, json::object()));
  std::optional<model::FieldError> e = check(512, json::object());
  ASSERT_TRUE(e);
  EXPECT_EQ(e->path, "model.window");
  EXPECT_THAT(e->message, ::testing::StartsWith("512 covers the longest context of the cell "
                                                "(512 tokens"));
  // Without NIAH the longest context is seq_len.
  EXPECT_FALSE(check(255, {{"niah_samples", 0}}));
  EXPECT_TRUE(check(256, {{"niah_samples", 0}}));
}

TEST(GridTest, SameValueComparesNumbersAndTokenCounts) {
  EXPECT_TRUE(SameValue(1e-3, 0.001));
  EXPECT_TRUE(SameValue(64, 64.0));
  EXPECT_TRUE(SameValue("1M", 1'000'000));
  EXPECT_TRUE(SameValue("1M", "1000K"));
  EXPECT_FALSE(SameValue("full", "swa"));
  EXPECT_FALSE(SameValue(16, "x"));
  EXPECT_FALSE(SameValue(true, 1));
}

}  // namespace
}  // namespace onset::coordinator
