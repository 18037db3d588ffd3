// A cell's id: the name the coordinator gives a cell and the exported weights carry
// (safetensors metadata "cell_id"). One definition, so that the two always agree.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace onset::base {

// Hex digits in a cell's id.
inline constexpr size_t kCellIdHexChars = 16;

// The id of the cell whose canonical config text (model::CellConfig::CanonicalText) is
// `canonical_text`: the first 16 hex digits (64 bits) of its SHA-256.
std::string CellIdOf(std::string_view canonical_text);

}  // namespace onset::base
