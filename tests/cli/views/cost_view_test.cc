// The cost of a dry run against figures computed by hand: FLOPs per cell are its training FLOPs
// per token times the tokens it trains (a branch only its decay, a trunk to its end), cells that
// exist cost nothing, and device-hours follow from the throughput stated either way.
#include "cli/views/cost_view.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace onset::cli {
namespace {

using ::testing::HasSubstr;

v1::Cell* AddCell(v1::SubmitStudyResponse* preview, const std::string& id, const std::string& arch,
                  const std::string& seed, double flops_per_token, int64_t budget, bool fresh) {
  v1::Cell* cell = preview->add_cells();
  cell->set_id(id);
  (*cell->mutable_axes())["arch"] = arch;
  (*cell->mutable_axes())["tokens"] = std::to_string(budget);
  (*cell->mutable_axes())["seed"] = seed;
  cell->set_train_flops_per_token(flops_per_token);
  cell->set_tokens_budget(budget);
  if (fresh) preview->add_new_cell_ids(id);
  return cell;
}

// Two seeds of full attention (new), one swa cell that exists, a new swa branch from 800K and
// its new trunk.
v1::SubmitStudyResponse Preview() {
  v1::SubmitStudyResponse preview;
  AddCell(&preview, "a", "full", "1", 6e6, 1'000'000, true);
  AddCell(&preview, "b", "full", "2", 6e6, 1'000'000, true);
  AddCell(&preview, "c", "swa", "1", 4e6, 1'000'000, false);
  v1::Cell* branch = AddCell(&preview, "d", "swa", "2", 1e6, 1'000'000, true);
  branch->set_role("branch");
  branch->set_trunk_id("e");
  branch->set_branch_tokens(800'000);
  v1::Cell* trunk = AddCell(&preview, "e", "swa", "2", 1e6, 800'000, true);
  trunk->set_role("trunk");
  return preview;
}

TEST(CostViewTest, FlopsAndTokensPerGroupAndInTotal) {
  const StudyCost cost = EstimateCost(Preview(), Throughput());
  ASSERT_EQ(cost.groups.size(), 3u);
  EXPECT_EQ(cost.groups[0].label, "arch=full tokens=1M");
  EXPECT_EQ(cost.groups[0].cells, 2);
  EXPECT_EQ(cost.groups[0].tokens, 2'000'000);
  EXPECT_DOUBLE_EQ(cost.groups[0].flops, 1.2e13);  // 2 x 6e6 x 1M
  EXPECT_EQ(cost.groups[1].label, "arch=swa tokens=1M");
  EXPECT_EQ(cost.groups[1].cells, 1);         // the stored cell costs nothing
  EXPECT_EQ(cost.groups[1].tokens, 200'000);  // the branch trains its decay only
  EXPECT_DOUBLE_EQ(cost.groups[1].flops, 2e11);
  EXPECT_EQ(cost.groups[2].label, "trunks");
  EXPECT_EQ(cost.groups[2].tokens, 800'000);
  EXPECT_DOUBLE_EQ(cost.groups[2].flops, 8e11);
  EXPECT_EQ(cost.total.cells, 4);
  EXPECT_EQ(cost.total.tokens, 3'000'000);
  EXPECT_DOUBLE_EQ(cost.total.flops, 1.3e13);
  EXPECT_DOUBLE_EQ(cost.total.device_hours, 0);  // no throughput stated
}

TEST(CostViewTest, DeviceHoursAtAStatedMfuOrTokensPerSecond) {
  const absl::StatusOr<Throughput> mfu = Throughput::From(1e12, 0.5, 0);
  ASSERT_TRUE(mfu.ok()) << mfu.status();
  // 1.3e13 FLOPs at 5e11 FLOP/s: 26 device-seconds.
  EXPECT_NEAR(EstimateCost(Preview(), *mfu).total.device_hours, 26.0 / 3600, 1e-12);
  const absl::StatusOr<Throughput> measured = Throughput::From(0, 0, 1000);
  ASSERT_TRUE(measured.ok()) << measured.status();
  // 3M tokens at 1,000 tokens/s: 3,000 device-seconds.
  const StudyCost cost = EstimateCost(Preview(), *measured);
  EXPECT_NEAR(cost.total.device_hours, 3000.0 / 3600, 1e-12);
  EXPECT_NEAR(cost.groups[0].device_hours, 2000.0 / 3600, 1e-12);
  const std::string text = RenderCost(cost, *measured);
  EXPECT_THAT(text, HasSubstr("total"));
  EXPECT_THAT(text, HasSubstr("0.833"));
  EXPECT_THAT(text, HasSubstr("device-hours at 1K tokens/s per device"));
  EXPECT_THAT(RenderCost(EstimateCost(Preview(), *mfu), *mfu),
              HasSubstr("at 50% MFU of 1e12 FLOP/s per device"));
  const nlohmann::json json = nlohmann::json::parse(CostJson(cost, *measured));
  EXPECT_EQ(json["total"]["tokens"], 3'000'000);
  EXPECT_DOUBLE_EQ(json["total"]["flops"].get<double>(), 1.3e13);
  EXPECT_EQ(json["groups"].size(), 3u);
}

TEST(CostViewTest, WithoutAThroughputDeviceHoursAreUnknownNotZero) {
  const StudyCost cost = EstimateCost(Preview(), Throughput());
  EXPECT_THAT(RenderCost(cost, Throughput()), HasSubstr("--peak-flops and --mfu"));
  const nlohmann::json json = nlohmann::json::parse(CostJson(cost, Throughput()));
  EXPECT_TRUE(json["total"]["device_hours"].is_null());
}

TEST(CostViewTest, AThroughputIsStatedOneWayWithinRange) {
  EXPECT_FALSE(Throughput::From(1e12, 0, 0).ok());   // peak without MFU
  EXPECT_FALSE(Throughput::From(0, 0.4, 0).ok());    // MFU without peak
  EXPECT_FALSE(Throughput::From(1e12, 40, 0).ok());  // a percentage, not a fraction
  EXPECT_FALSE(Throughput::From(-1, 0.4, 0).ok());
  EXPECT_FALSE(Throughput::From(1e12, 0.4, 1000).ok());  // both ways
  EXPECT_FALSE(Throughput::From(0, 0, -5).ok());
  EXPECT_TRUE(Throughput::From(0, 0, 0).ok());  // none: FLOPs only
}

TEST(CostViewTest, NothingNewCostsNothing) {
  v1::SubmitStudyResponse preview;
  AddCell(&preview, "c", "swa", "1", 4e6, 1'000'000, false);
  EXPECT_EQ(RenderCost(EstimateCost(preview, Throughput()), Throughput()),
            "nothing new to train\n");
}

}  // namespace
}  // namespace onset::cli
