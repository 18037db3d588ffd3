#include "common/tensorboard/crc32c.h"

#include <gtest/gtest.h>

#include <string>

namespace onset::tensorboard {
namespace {

// RFC 3720, B.4, and the check value of the CRC-32C catalogue entry.
TEST(Crc32cTest, MatchesTheStandardsCheckValues) {
  EXPECT_EQ(Crc32c("123456789"), 0xE3069283u);
  EXPECT_EQ(Crc32c(std::string(32, '\0')), 0x8A9136AAu);
  EXPECT_EQ(Crc32c(std::string(32, '\xff')), 0x62A8AB43u);
  EXPECT_EQ(Crc32c(""), 0u);
}

TEST(Crc32cTest, TheMaskRotatesAndAddsTheConstant) {
  const uint32_t crc = Crc32c("abc");
  EXPECT_EQ(MaskedCrc32c("abc"), ((crc >> 15) | (crc << 17)) + 0xa282ead8u);
}

}  // namespace
}  // namespace onset::tensorboard
