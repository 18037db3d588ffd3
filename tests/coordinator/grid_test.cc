#include "coordinator/grid.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

#include "coordinator/study_file.h"
#include "tests/coordinator/test_util.h"

namespace onset::coordinator {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;

GridAxes FullGrid() {
  GridAxes axes;
  axes[Axis::kArch] = {"full", "swa"};
  axes[Axis::kWindow] = {32, 64};
  axes[Axis::kPos] = {"rope", "nope-full"};
  axes[Axis::kTokens] = {"250K", 1'000'000};
  axes[Axis::kSeed] = {0, 1, 2};
  return axes;
}

json Base() {
  return json{{"study", "g"},
              {"model", {{"layers", 4}, {"d_model", 32}, {"heads", 2}, {"seq_len", 64}}},
              {"train", {{"batch_tokens", 512}}}};
}

TEST(GridTest, CartesianProductHasEveryPointOnceInStableOrder) {
  GridAxes axes = FullGrid();
  EXPECT_EQ(axes.Size(), 48);
  std::vector<GridPoint> points = CartesianProduct(axes);
  ASSERT_EQ(points.size(), 48u);
  EXPECT_EQ(std::set<GridPoint>(points.begin(), points.end()).size(), 48u);
  // Seed outermost, pos innermost.
  EXPECT_EQ(points[0], (GridPoint{0, 0, 0, 0, 0}));
  EXPECT_EQ(points[1], (GridPoint{0, 0, 0, 0, 1}));
  EXPECT_EQ(points[2], (GridPoint{0, 0, 0, 1, 0}));
  EXPECT_EQ(points[47], (GridPoint{2, 1, 1, 1, 1}));
}

TEST(GridTest, AbsentAxesAreNotVaried) {
  GridAxes axes;
  axes[Axis::kArch] = {"full", "swa"};
  std::vector<GridPoint> points = CartesianProduct(axes);
  ASSERT_EQ(points.size(), 2u);
  EXPECT_EQ(points[1], (GridPoint{-1, -1, 1, -1, -1}));
  GridAxes empty;
  EXPECT_EQ(CartesianProduct(empty).size(), 1u);
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
  GridAxes axes;
  axes[Axis::kArch] = {"swa"};
  axes[Axis::kWindow] = {16};
  axes[Axis::kTokens] = {"250K"};
  axes[Axis::kSeed] = {7};
  absl::StatusOr<std::vector<CellSpec>> cells = ExpandGrid(Base(), axes);
  ASSERT_TRUE(cells.ok()) << cells.status();
  ASSERT_EQ(cells->size(), 1u);
  const CellSpec& c = cells->front();
  EXPECT_EQ(c.axes, (std::map<std::string, std::string>{
                        {"arch", "swa"}, {"window", "16"}, {"pos", "rope"},
                        {"tokens", "250000"}, {"seed", "7"}}));
  EXPECT_EQ(c.tokens_budget, 250'000);
  model::CellConfig parsed;
  ASSERT_FALSE(model::ParseCellConfig(json::parse(c.config_json), &parsed).has_value());
  EXPECT_EQ(CellId(parsed), c.id);  // the canonical text round-trips to the same id
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
  absl::StatusOr<std::vector<CellSpec>> a = ExpandGrid(Base(), GridAxes());
  absl::StatusOr<std::vector<CellSpec>> b = ExpandGrid(other, GridAxes());
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE(a->front().id, b->front().id);
}

TEST(GridTest, ReportsTheFirstBadCell) {
  GridAxes axes;
  axes[Axis::kArch] = {"full", "XYZ"};
  absl::StatusOr<std::vector<CellSpec>> cells = ExpandGrid(Base(), axes);
  ASSERT_FALSE(cells.ok());
  EXPECT_EQ(cells.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(cells.status().message()),
              ::testing::StartsWith("model.arch: unknown arch 'XYZ'"));
}

TEST(GridTest, RefusesAGridOverTheLimit) {
  GridAxes axes;
  for (int i = 0; i < 400; ++i) {
    axes[Axis::kSeed].push_back(i);
    axes[Axis::kWindow].push_back(i + 1);
  }
  absl::StatusOr<std::vector<CellSpec>> cells = ExpandGrid(Base(), axes);
  EXPECT_EQ(cells.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace onset::coordinator
