#include "coordinator/study/append_only.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "coordinator/study/study_file.h"

namespace onset::coordinator {

// For matchers (found by argument-dependent lookup, so outside the unnamed namespace).
bool operator==(const FieldChange& a, const FieldChange& b) {
  return a.path == b.path && a.before == b.before && a.after == b.after;
}

namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr const char* kStudy = R"yaml(name: a
model: {layers: 4, d_model: 32, heads: 2, seq_len: 64}
train: {batch_tokens: 512, tokens: 1M, lr: 3e-3}
grid:
  arch: [full, swa]
  window: 16
)yaml";

std::vector<CellSpec> Cells(const std::string& yaml) {
  absl::StatusOr<StudySpec> spec = ParseStudyFile("a.yaml", yaml);
  EXPECT_TRUE(spec.ok()) << spec.status();
  return spec.ok() ? spec->cells : std::vector<CellSpec>{};
}

std::string Replace(std::string text, const std::string& from, const std::string& to) {
  text.replace(text.find(from), from.size(), to);
  return text;
}

TEST(DiffConfigsTest, NamesEveryChangedFieldInPathOrder) {
  EXPECT_TRUE(DiffConfigs(R"({"model":{"a":1}})", R"({"model":{"a":1}})").empty());
  EXPECT_THAT(
      DiffConfigs(R"({"study":"s","train":{"lr":0.003,"x":"a"},"model":{"w":1}})",
                  R"({"study":"s","train":{"lr":0.001,"x":"b"},"model":{}})"),
      ElementsAre(FieldChange{"model.w", "1", "(unset)"}, FieldChange{"train.lr", "0.003", "0.001"},
                  FieldChange{"train.x", "a", "b"}));
}

TEST(DescribeGridPointTest, NamedAxesFirstThenTheOthers) {
  EXPECT_EQ(DescribeGridPoint({{"seed", "0"},
                               {"arch", "swa"},
                               {"train.lr", "0.001"},
                               {"window", "16"},
                               {"pos", "rope"},
                               {"tokens", "1000000"}}),
            "arch=swa window=16 pos=rope tokens=1000000 seed=0 train.lr=0.001");
}

TEST(CheckAppendOnlyTest, NewPointsAndIdenticalCellsAreFine) {
  const std::vector<CellSpec> stored = Cells(kStudy);
  EXPECT_TRUE(CheckAppendOnly(stored, stored).ok());
  // A second seed adds points; the seed-0 cells are the stored ones.
  EXPECT_TRUE(CheckAppendOnly(stored, Cells(std::string(kStudy) + "  seeds: 2\n")).ok());
  // Making lr an axis names new points (they show train.lr), one of them the stored cell.
  EXPECT_TRUE(
      CheckAppendOnly(stored, Cells(Replace(Replace(kStudy, ", lr: 3e-3", ""), "  window: 16\n",
                                            "  window: 16\n  train.lr: [1e-3, 3e-3]\n")))
          .ok());
  EXPECT_TRUE(CheckAppendOnly({}, stored).ok());
}

TEST(CheckAppendOnlyTest, RefusesToRedefineAStoredGridPoint) {
  const std::vector<CellSpec> stored = Cells(kStudy);
  absl::Status status = CheckAppendOnly(stored, Cells(Replace(kStudy, "lr: 3e-3", "lr: 1e-3")));
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(status.message(),
            "cell arch=full window=- pos=rope tokens=1000000 seed=0 exists with train.lr = "
            "0.003; this file gives 0.001: add train.lr as an axis or use a new study name (a "
            "study's cells never change)");

  // Several fields: the first few by path, then how many more.
  status = CheckAppendOnly(stored, Cells(Replace(Replace(kStudy, "seq_len: 64", "seq_len: 128"),
                                                 "layers: 4", "layers: 8")));
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(status.message(),
            "cell arch=full window=- pos=rope tokens=1000000 seed=0 exists with "
            "data.max_distance = 64, eval.niah_lengths = [64,128], model.layers = 4 and 2 more; "
            "this file gives data.max_distance = 128, eval.niah_lengths = [64,128,256], "
            "model.layers = 8: make the changed fields axes or use a new study name (a study's "
            "cells never change)");
}

}  // namespace
}  // namespace onset::coordinator
