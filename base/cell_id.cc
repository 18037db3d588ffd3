#include "base/cell_id.h"

#include "base/sha256.h"

namespace onset::base {

std::string CellIdOf(std::string_view canonical_text) {
  return Sha256Hex(canonical_text).substr(0, kCellIdHexChars);
}

}  // namespace onset::base
