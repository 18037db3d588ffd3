#include "cli/views/export_view.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <sstream>

namespace onset::cli {
namespace {

v1::GetStudyResponse Study() {
  v1::GetStudyResponse study;
  v1::Cell* a = study.add_cells();
  a->set_id("aaaa");
  a->set_state(v1::CELL_STATE_SUCCEEDED);
  (*a->mutable_axes())["arch"] = "full";
  (*a->mutable_axes())["tokens"] = "3000000";
  v1::Cell* b = study.add_cells();  // no points: no rows
  b->set_id("bbbb");
  (*b->mutable_axes())["window"] = "16,32";
  return study;
}

analysis::Curves Curves() {
  analysis::Curves curves;
  curves["aaaa"]["train/loss"] = {{1000, 2.5}, {2000, std::nan("")}};
  return curves;
}

// The first point's time is known, the second's (a point stored before times were) is not.
analysis::CurveTimes Times() {
  analysis::CurveTimes times;
  times["aaaa"]["train/loss"] = {1796558400123, 0};
  return times;
}

TEST(ExportViewTest, CsvHasAnAxisColumnPerAxisQuotesWhatNeedsItAndLeavesNanEmpty) {
  std::ostringstream out;
  const analysis::CurveTimes times = Times();
  WriteExport("my,study", Study(), Curves(), &times, ExportFormat::kCsv, out);
  EXPECT_EQ(out.str(),
            "study,cell_id,state,axis.arch,axis.tokens,axis.window,metric,tokens,value,at_unix_ms\n"
            "\"my,study\",aaaa,succeeded,full,3000000,,train/loss,1000,2.5,1796558400123\n"
            "\"my,study\",aaaa,succeeded,full,3000000,,train/loss,2000,,\n");
}

TEST(ExportViewTest, WithoutTimesEveryTimeIsEmpty) {
  std::ostringstream out;
  WriteExport("s", Study(), Curves(), nullptr, ExportFormat::kCsv, out);
  EXPECT_THAT(out.str(), testing::HasSubstr("train/loss,1000,2.5,\n"));
}

TEST(ExportViewTest, JsonLinesCarryTheAxesAndNullForNan) {
  std::ostringstream out;
  const analysis::CurveTimes times = Times();
  WriteExport("s", Study(), Curves(), &times, ExportFormat::kJsonLines, out);
  std::istringstream lines(out.str());
  std::string line;
  std::vector<nlohmann::json> rows;
  while (std::getline(lines, line)) rows.push_back(nlohmann::json::parse(line));
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0]["axes"]["arch"], "full");
  EXPECT_EQ(rows[0]["value"], 2.5);
  EXPECT_EQ(rows[1]["value"], nullptr);
  EXPECT_EQ(rows[1]["tokens"], 2000);
  EXPECT_EQ(rows[0]["at_unix_ms"], 1796558400123);
  EXPECT_EQ(rows[1]["at_unix_ms"], nullptr);
}

}  // namespace
}  // namespace onset::cli
