// `onset heads`: the text of a cell's retrieval-head map (analysis/head_map.h).
#pragma once

#include <string>

#include "analysis/head_map.h"

namespace onset::cli {

using analysis::BuildHeadMap;
using analysis::HeadMap;
using analysis::kRetrievalHead;

// Rows are layers, columns heads; a retrieval head is marked with '*'.
std::string RenderHeadMap(const HeadMap& map);

}  // namespace onset::cli
