#include <gtest/gtest.h>

#include <set>

#include "common/random_id.h"

namespace onset::common {
namespace {

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
