// `onset compare`'s text: the table of analysis/study_compare.h for people. Columns: the
// grouping axes, N (with how many cells are censored, "3 (1 <=, 1 >)"), CROSSED (k/n), T(x)
// (or FLOPS(x): the Kaplan-Meier median), MIN-MAX, FINAL, KEY-SWAP (or COPY-RATE, in studies
// older than the key swap) beside a NIAH accuracy, MEAN/LOG-T, PARAMS and FLOPS/TOK when
// known, SPEED-UP and SEED-WISE with a baseline. Then, over tokens, how many cells of each
// group had crossed by each eval point.
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

using analysis::XAxis;

// "2.35M" for a crossing, "<= 250K" for a left-censored one (reached by the first eval point),
// "> 6M" for a right-censored one (never reached), "?" when unknown; FLOPs as "2.35e15".
std::string FormatCrossing(const analysis::Crossing& c, XAxis x = XAxis::kTokens);
// A point on the x axis: tokens as "250K", FLOPs as "2.35e15".
std::string FormatX(double at, XAxis x);
std::string RenderCompare(const CompareTable& table, const CompareSpec& spec);
// With spec.best_over: the rule in words, then per group the value chosen and every value's
// score (best_over.h); "" without it. Part of RenderCompare; plot and fit print it alone.
std::string RenderBestOverChoices(const CompareTable& table, const CompareSpec& spec);
// The grouping axes as table headers: "ARCH", "WINDOW", ...
std::vector<std::string> GroupHeaders(const CompareTable& table);

}  // namespace onset::cli
