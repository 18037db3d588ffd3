#include "cli/views/fit_view.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

namespace onset::cli {
namespace {

using ::testing::HasSubstr;

std::vector<FitGroup> TwoGroups() {
  FitGroup fitted;
  fitted.axes = {{"arch", "full"}};
  fitted.cell_ids = {"a", "b"};
  fitted.points = 6;
  analysis::PowerLawFit fit;
  fit.E = 1.5;
  fit.B = 2;
  fit.beta = 0.5;
  fit.D0 = 1e6;
  fit.E_se = 0.25;
  fit.B_se = std::nan("");  // an exact fit has no error estimate
  fit.beta_se = 0.125;
  fit.rmse = 0.01;
  fit.points = 6;
  fitted.fit = fit;
  FitGroup none;
  none.axes = {{"arch", "swa"}};
  none.cell_ids = {"c"};
  none.points = 2;
  none.problem = "fewer than 3 points";
  return {fitted, none};
}

TEST(FitViewTest, ATableRowPerGroupWithErrorsOrWhyThereIsNoFit) {
  const std::string text = RenderFit("eval/heldout_loss", {"arch"}, TwoGroups());
  EXPECT_THAT(text, HasSubstr("eval/heldout_loss = E + B (D / D0)^-beta"));
  EXPECT_THAT(text, HasSubstr("ARCH"));
  EXPECT_THAT(text, HasSubstr("1.5 +- 0.25"));
  EXPECT_THAT(text, HasSubstr("0.5 +- 0.125"));
  EXPECT_THAT(text, HasSubstr("1M"));
  EXPECT_THAT(text, ::testing::Not(HasSubstr("2 +- ")));  // no error estimate for B
  EXPECT_THAT(text, HasSubstr("no fit: fewer than 3 points"));
}

TEST(FitViewTest, JsonHasEveryEstimateAndNullForMissingErrors) {
  const nlohmann::json j = nlohmann::json::parse(FitJson("m", 1000, TwoGroups()));
  EXPECT_EQ(j["metric"], "m");
  EXPECT_EQ(j["min_tokens"], 1000);
  ASSERT_EQ(j["groups"].size(), 2u);
  EXPECT_EQ(j["groups"][0]["fit"]["E"], 1.5);
  EXPECT_EQ(j["groups"][0]["fit"]["B_se"], nullptr);
  EXPECT_EQ(j["groups"][0]["cells"], nlohmann::json({"a", "b"}));
  EXPECT_EQ(j["groups"][1]["fit"], nullptr);
  EXPECT_EQ(j["groups"][1]["problem"], "fewer than 3 points");
}

}  // namespace
}  // namespace onset::cli
