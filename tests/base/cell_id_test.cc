#include "base/cell_id.h"

#include <gtest/gtest.h>

#include <string>

#include "base/sha256.h"

namespace onset::base {
namespace {

TEST(CellIdOfTest, IsTheFirst16HexDigitsOfTheSha256OfTheCanonicalText) {
  // Pinned (hashlib.sha256(text).hexdigest()[:16]): cells are named so in databases,
  // checkpoint paths and exports.
  EXPECT_EQ(CellIdOf(R"({"model":{"arch":"full"}})"), "75d0c933d7f758d5");
  EXPECT_EQ(CellIdOf(""), "e3b0c44298fc1c14");
  const std::string text = "any canonical text";
  EXPECT_EQ(CellIdOf(text), Sha256Hex(text).substr(0, 16));
  EXPECT_NE(CellIdOf(text), CellIdOf(text + " "));
}

}  // namespace
}  // namespace onset::base
