#include <gtest/gtest.h>

#include <set>

#include "common/random_id.h"
#include "common/sha256.h"

namespace onset::common {
namespace {

TEST(Sha256HexTest, MatchesKnownVectors) {
  EXPECT_EQ(Sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(RandomHexTest, HasTheRequestedLengthAndDoesNotRepeat) {
  std::set<std::string> seen;
  for (int i = 0; i < 100; ++i) {
    std::string id = RandomHex(16);
    ASSERT_EQ(id.size(), 32u);
    EXPECT_EQ(id.find_first_not_of("0123456789abcdef"), std::string::npos) << id;
    seen.insert(id);
  }
  EXPECT_EQ(seen.size(), 100u);
}

}  // namespace
}  // namespace onset::common
