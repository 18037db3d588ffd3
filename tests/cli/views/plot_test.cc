#include "cli/views/plot.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace onset::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(PlotTest, OneCurvePerGroupTheThresholdAndCensoredGroupsMarked) {
  v1::GetStudyResponse study;
  study.mutable_study()->set_name("demo");
  const char* archs[] = {"full", "full", "swa<&>"};
  for (int i = 0; i < 3; ++i) {
    v1::Cell* c = study.add_cells();
    c->set_id("c" + std::to_string(i));
    c->set_state(v1::CELL_STATE_SUCCEEDED);
    c->set_tokens_budget(4'000'000);
    (*c->mutable_axes())["arch"] = archs[i];
    (*c->mutable_axes())["seed"] = std::to_string(i);
  }
  Curves curves;
  curves["c0"]["m"] = {{1'000'000, 0.2}, {4'000'000, 0.8}};
  curves["c1"]["m"] = {{1'000'000, 0.3}, {4'000'000, 0.9}};
  curves["c2"]["m"] = {{1'000'000, 0.0}, {4'000'000, 0.1}};  // never reaches 0.5
  CompareSpec spec;
  spec.metric = "m";
  spec.threshold = 0.5;
  std::string error;
  const CompareTable table = Compare(study, curves, spec, &error);
  ASSERT_EQ(error, "");

  PlotOptions options;
  options.threshold = true;
  const std::string svg = RenderSvg(table, curves, spec, options);
  EXPECT_EQ(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0), 0u);
  EXPECT_THAT(svg, HasSubstr("</svg>"));
  EXPECT_EQ(Count(svg, "class=\"curve\""), 2u);
  EXPECT_EQ(Count(svg, "class=\"threshold\""), 1u);
  EXPECT_EQ(Count(svg, "class=\"censored\""), 1u);       // the swa group only
  EXPECT_EQ(Count(svg, "fill-opacity=\"0.15\""), 1u);    // a seed band for the 2-cell group
  EXPECT_THAT(svg, HasSubstr("arch=swa&lt;&amp;&gt;"));  // labels are escaped
  EXPECT_THAT(svg, Not(HasSubstr("swa<&>")));
  EXPECT_THAT(svg, HasSubstr("T = &gt; 4M, 0/1 crossed"));
  EXPECT_THAT(svg, HasSubstr(">1M<"));  // decade ticks

  options.threshold = false;
  EXPECT_EQ(Count(RenderSvg(table, curves, spec, options), "class=\"threshold\""), 0u);
}

// What a plot without a threshold shows: no censoring marks (there is nothing to reach), an x
// axis that spans the data (254K..3M tokens: no 100K or 10M tick), and a legend that names only
// the axes that tell the groups apart.
TEST(PlotTest, WithoutAThresholdNothingIsCensoredTheAxisFitsAndTheLegendNamesWhatVaries) {
  v1::GetStudyResponse study;
  study.mutable_study()->set_name("demo");
  for (int i = 0; i < 2; ++i) {
    v1::Cell* c = study.add_cells();
    c->set_id("c" + std::to_string(i));
    c->set_state(v1::CELL_STATE_SUCCEEDED);
    c->set_tokens_budget(3'000'000);
    (*c->mutable_axes())["arch"] = i == 0 ? "full" : "swa";
    (*c->mutable_axes())["pos"] = "rope";   // never varies
    (*c->mutable_axes())["window"] = "16";  // never varies
  }
  Curves curves;
  curves["c0"]["m"] = {{254'000, 5.0}, {1'000'000, 4.0}, {3'000'000, 3.5}};
  curves["c1"]["m"] = {{254'000, 5.2}, {1'000'000, 4.4}, {3'000'000, 3.9}};
  CompareSpec spec;
  spec.metric = "m";
  spec.threshold = 0;  // what the plot command passes without --threshold
  spec.direction = analysis::Direction::kDown;
  std::string error;
  const CompareTable table = Compare(study, curves, spec, &error);
  ASSERT_EQ(error, "");
  const std::string svg = RenderSvg(table, curves, spec, PlotOptions());
  EXPECT_EQ(Count(svg, "class=\"censored\""), 0u);
  EXPECT_EQ(Count(svg, "class=\"threshold\""), 0u);
  EXPECT_THAT(svg, HasSubstr(">500K<"));
  EXPECT_THAT(svg, HasSubstr(">1M<"));
  EXPECT_THAT(svg, HasSubstr(">2M<"));
  EXPECT_THAT(svg, Not(HasSubstr(">100K<")));
  EXPECT_THAT(svg, Not(HasSubstr(">10M<")));
  EXPECT_THAT(svg, HasSubstr(">arch=full<"));
  EXPECT_THAT(svg, HasSubstr(">arch=swa<"));
  EXPECT_THAT(svg, Not(HasSubstr("pos=rope")));
  EXPECT_THAT(svg, Not(HasSubstr("window=16")));
}

// The emergence figure: per group the fraction of its cells past the threshold, a step from 0
// at the first eval point to crossed/n at the last, the 1/2 line its median is read at.
TEST(PlotTest, TheFractionEmergedIsAStepCurveFromZeroToCrossedOverN) {
  v1::GetStudyResponse study;
  study.mutable_study()->set_name("demo");
  for (int i = 0; i < 3; ++i) {
    v1::Cell* c = study.add_cells();
    c->set_id("c" + std::to_string(i));
    c->set_state(v1::CELL_STATE_SUCCEEDED);
    c->set_tokens_budget(4'000'000);
    (*c->mutable_axes())["arch"] = "full";
    (*c->mutable_axes())["seed"] = std::to_string(i);
  }
  Curves curves;
  curves["c0"]["m"] = {{1'000'000, 0.2}, {4'000'000, 0.8}};
  curves["c1"]["m"] = {{1'000'000, 0.2}, {2'000'000, 0.9}, {4'000'000, 0.9}};
  curves["c2"]["m"] = {{1'000'000, 0.0}, {4'000'000, 0.1}};
  CompareSpec spec;
  spec.metric = "m";
  spec.threshold = 0.5;
  std::string error;
  PlotOptions options;
  options.emergence = true;
  const std::string svg = RenderSvg(Compare(study, curves, spec, &error), curves, spec, options);
  EXPECT_THAT(svg, HasSubstr("fraction of cells with m &gt;= 0.5"));
  EXPECT_THAT(svg, HasSubstr("T = 2M, 2/3 crossed"));  // 1/3 at 1.41M, 2/3 at 2M
  EXPECT_EQ(Count(svg, "class=\"threshold\""), 1u);
  // One band: the curve's pointwise 95% band (median_interval.h), not the seeds' range.
  EXPECT_EQ(Count(svg, "fill-opacity"), 1u);
  // From 1M at 0 (y = 392) to 4M at 2/3, the axis spanning 1M..4M and a margin of 3% of it
  // each side (x = 78.2 and 505.8 of 64..520): 5 steps' points after the first.
  EXPECT_THAT(svg, HasSubstr("class=\"curve\" d=\"M78.2,392.0 L"));
  EXPECT_THAT(svg, HasSubstr(" L505.8,154.7\""));
  // A group of one cell has no band.
  study.mutable_cells()->DeleteSubrange(1, 2);
  const std::string one = RenderSvg(Compare(study, curves, spec, &error), curves, spec, options);
  EXPECT_EQ(Count(one, "fill-opacity"), 0u);
}

TEST(PlotTest, AFirstPointCrossingIsABoundAndFlopsCanBeTheAxis) {
  v1::GetStudyResponse study;
  study.mutable_study()->set_name("demo");
  for (int i = 0; i < 2; ++i) {
    v1::Cell* c = study.add_cells();
    c->set_id("c" + std::to_string(i));
    c->set_state(v1::CELL_STATE_SUCCEEDED);
    c->set_tokens_budget(4'000'000);
    c->set_train_flops_per_token(i == 0 ? 1e6 : 3e6);
    (*c->mutable_axes())["arch"] = i == 0 ? "full" : "swa";
  }
  Curves curves;
  curves["c0"]["m"] = {{250'000, 0.6}, {4'000'000, 0.8}};  // past 0.5 at its first point
  curves["c1"]["m"] = {{1'000'000, 0.2}, {4'000'000, 0.8}};
  CompareSpec spec;
  spec.metric = "m";
  spec.threshold = 0.5;
  std::string error;
  PlotOptions options;
  options.threshold = true;
  std::string svg = RenderSvg(Compare(study, curves, spec, &error), curves, spec, options);
  EXPECT_THAT(svg, HasSubstr("T = &lt;= 250K, 1/1 crossed"));
  EXPECT_THAT(svg, HasSubstr("T = 2M, 1/1 crossed"));
  EXPECT_EQ(Count(svg, "class=\"censored\""), 0u);  // reached, however early
  EXPECT_THAT(svg, HasSubstr("tokens seen (log scale)"));

  spec.x = analysis::XAxis::kFlops;
  svg = RenderSvg(Compare(study, curves, spec, &error), curves, spec, options);
  EXPECT_THAT(svg, HasSubstr("FLOPs = &lt;= 2.5e11, 1/1 crossed"));
  EXPECT_THAT(svg, HasSubstr("FLOPs = 6e12, 1/1 crossed"));
  EXPECT_THAT(svg, HasSubstr("training FLOPs (log scale)"));
  EXPECT_THAT(svg, HasSubstr(">1e12<"));  // decade ticks in FLOPs
  EXPECT_THAT(svg, Not(HasSubstr(">1M<")));
}

}  // namespace
}  // namespace onset::cli
