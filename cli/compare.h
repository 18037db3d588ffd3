// `onset compare`'s text: the table of analysis/study_compare.h for people.
#pragma once

#include <string>
#include <vector>

#include "analysis/study_compare.h"

namespace onset::cli {

using analysis::Compare;
using analysis::CompareJson;
using analysis::CompareRow;
using analysis::CompareSpec;
using analysis::CompareTable;
using analysis::Curves;

// "> 6M" for a censored crossing, "2.35M" otherwise.
std::string FormatCrossing(const analysis::Crossing& c);
std::string RenderCompare(const CompareTable& table, const CompareSpec& spec);
// The grouping axes as table headers: "ARCH", "WINDOW", ...
std::vector<std::string> GroupHeaders(const CompareTable& table);

}  // namespace onset::cli
