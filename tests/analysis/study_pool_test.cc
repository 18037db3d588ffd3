// Several studies pooled as one (analysis/study_pool.h), read from an in-memory source.
#include "analysis/study_pool.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>

namespace onset::analysis {
namespace {

using ::testing::HasSubstr;

struct FakeCell {
  std::string id;
  std::map<std::string, std::string> axes;
  std::string config;  // with the study's name
  std::map<std::string, std::vector<std::pair<int64_t, double>>> curves;
};

class FakeSource : public StudySource {
 public:
  void Add(const std::string& study, std::vector<FakeCell> cells) { studies_[study] = cells; }

  absl::StatusOr<v1::GetStudyResponse> GridCells(const std::string& study) override {
    auto it = studies_.find(study);
    if (it == studies_.end()) return absl::NotFoundError("no study " + study);
    v1::GetStudyResponse out;
    out.mutable_study()->set_name(study);
    for (const FakeCell& c : it->second) {
      v1::Cell* cell = out.add_cells();
      cell->set_id(c.id);
      cell->set_tokens_budget(100);
      for (const auto& [k, v] : c.axes) (*cell->mutable_axes())[k] = v;
    }
    return out;
  }
  absl::StatusOr<Curves> StudyCurves(const std::string& study,
                                     const std::vector<std::string>& metrics,
                                     CurveTimes* times) override {
    Curves out;
    for (const FakeCell& c : studies_.at(study)) {
      for (const auto& [metric, points] : c.curves) {
        if (!metrics.empty() &&
            std::find(metrics.begin(), metrics.end(), metric) == metrics.end()) {
          continue;
        }
        out[c.id][metric] = points;
        if (times != nullptr) (*times)[c.id][metric] = std::vector<int64_t>(points.size(), 7);
      }
    }
    return out;
  }
  absl::StatusOr<std::string> CellConfig(const std::string& study,
                                         const std::string& cell_id) override {
    ++config_reads;
    for (const FakeCell& c : studies_.at(study)) {
      if (c.id == cell_id) return c.config;
    }
    return absl::NotFoundError("no cell " + cell_id);
  }

  int config_reads = 0;

 private:
  std::map<std::string, std::vector<FakeCell>> studies_;
};

FakeCell Cell(const std::string& study, const std::string& id, int seed, double lr, double acc,
              double loss = 1.0) {
  return {id,
          {{"arch", "full"}, {"seed", std::to_string(seed)}},
          nlohmann::json({{"study", study}, {"seed", seed}, {"lr", lr}}).dump(),
          {{"acc", {{10, 0.1}, {100, acc}}}, {"loss", {{100, loss}}}}};
}

TEST(StudyPoolTest, TheSameExperimentInTwoStudiesCountsOnceTheFirstStudys) {
  FakeSource source;
  source.Add("a", {Cell("a", "a0", 0, 1e-3, 0.9)});
  source.Add("b", {Cell("b", "b0", 0, 1e-3, 0.9), Cell("b", "b1", 1, 1e-3, 0.8),
                   Cell("b", "b2", 0, 1e-2, 0.7)});  // b2: same axes as a0, another lr
  absl::StatusOr<PooledStudies> pooled = PoolStudies(source, {"a", "b"}, {"acc"});
  ASSERT_TRUE(pooled.ok()) << pooled.status();
  std::vector<std::string> ids;
  for (const v1::Cell& c : pooled->study.cells()) ids.push_back(c.study() + "/" + c.id());
  EXPECT_EQ(ids, (std::vector<std::string>{"a/a0", "b/b1", "b/b2"}));
  EXPECT_EQ(pooled->study.study().name(), "a");
  EXPECT_EQ(pooled->curves.size(), 3u);
  EXPECT_EQ(pooled->curves.at("a0").count("loss"), 0u);  // only what was asked for
  EXPECT_TRUE(pooled->times.empty());                    // not asked for
  ASSERT_EQ(pooled->notes.size(), 1u);
  EXPECT_THAT(pooled->notes[0], HasSubstr("1 cell(s) of b are the same experiment as cells of "
                                          "a (configs equal but for the study) and count once: "
                                          "a's are used"));
}

TEST(StudyPoolTest, ResultsThatDifferAreWarnedAboutOnEveryMetricWhenAllAreAsked) {
  FakeSource source;
  source.Add("a", {Cell("a", "a0", 0, 1e-3, 0.9, 1.0)});
  source.Add("b", {Cell("b", "b0", 0, 1e-3, 0.9, 1.5)});  // equal acc, another loss
  absl::StatusOr<PooledStudies> only_acc = PoolStudies(source, {"a", "b"}, {"acc"});
  ASSERT_TRUE(only_acc.ok());
  EXPECT_EQ(only_acc->notes.size(), 1u);  // counted once, no warning: acc agrees
  absl::StatusOr<PooledStudies> all = PoolStudies(source, {"a", "b"}, {}, /*with_times=*/true);
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->notes.size(), 2u);
  EXPECT_THAT(all->notes[1], HasSubstr("different final values in 1 case(s)"));
  EXPECT_THAT(all->notes[1], HasSubstr("(loss 1.5) and a0 of a (1)"));
  EXPECT_EQ(all->times.at("a0").at("acc"), (std::vector<int64_t>{7, 7}));
  EXPECT_EQ(all->times.count("b0"), 0u);  // the duplicate's are not kept
}

TEST(StudyPoolTest, OneStudyIsReadAsItIsWithoutConfigReads) {
  FakeSource source;
  source.Add("a", {Cell("a", "a0", 0, 1e-3, 0.9), Cell("a", "a1", 0, 1e-2, 0.8)});
  absl::StatusOr<PooledStudies> pooled = PoolStudies(source, {"a"}, {"acc"});
  ASSERT_TRUE(pooled.ok());
  EXPECT_EQ(pooled->study.cells_size(), 2u);  // equal axes in one study: two cells
  EXPECT_TRUE(pooled->notes.empty());
  EXPECT_EQ(source.config_reads, 0);
}

TEST(StudyPoolTest, RefusesAStudyTwiceTooManyAndUnknownOnes) {
  FakeSource source;
  source.Add("a", {Cell("a", "a0", 0, 1e-3, 0.9)});
  EXPECT_THAT(PoolStudies(source, {"a", "a"}, {}).status().message(),
              HasSubstr("each at most once"));
  EXPECT_TRUE(absl::IsInvalidArgument(PoolStudies(source, {}, {}).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(
      PoolStudies(source, std::vector<std::string>(kMaxPooledStudies + 1, "a"), {}).status()));
  absl::Status unknown = PoolStudies(source, {"a", "zz"}, {}).status();
  EXPECT_TRUE(absl::IsNotFound(unknown));
  EXPECT_THAT(unknown.message(), HasSubstr("zz"));
}

TEST(StudyPoolTest, ConfigWithoutStudyDropsOnlyTheStudy) {
  EXPECT_EQ(ConfigWithoutStudy(R"({"study":"a","lr":1})"), R"({"lr":1})");
  EXPECT_EQ(ConfigWithoutStudy("not json"), "not json");
}

}  // namespace
}  // namespace onset::analysis
