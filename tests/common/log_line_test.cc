#include "common/log_line.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "common/utf8.h"

namespace onset::common {
namespace {

using ::testing::EndsWith;
using ::testing::StartsWith;

TEST(BoundLogLineTest, AShortValidLineIsKeptAsItIs) {
  EXPECT_EQ(BoundLogLine("step 10 loss 3.2"), "step 10 loss 3.2");
}

TEST(BoundLogLineTest, InvalidBytesBecomeReplacementChars) {
  EXPECT_EQ(BoundLogLine("bad \xFF byte"), "bad \xEF\xBF\xBD byte");
}

TEST(BoundLogLineTest, ALongLineIsCutOnACharacterBoundaryWithAMarker) {
  std::string line;
  while (line.size() < 3 * kMaxLogLineBytes) line += "\xE2\x82\xAC";  // 3-byte characters
  const std::string bounded = BoundLogLine(line);
  EXPECT_LE(bounded.size(), kMaxLogLineBytes);
  EXPECT_TRUE(IsValidUtf8(bounded));
  EXPECT_THAT(bounded, StartsWith("\xE2\x82\xAC\xE2\x82\xAC"));
  EXPECT_THAT(bounded,
              EndsWith(" [... cut: the line had " + std::to_string(line.size()) + " bytes]"));
}

TEST(BoundLogLineTest, APrefixOfALongerLineSaysHowLongTheLineWas) {
  const std::string bounded = BoundLogLine("first bytes", 5'000'000, 64);
  EXPECT_EQ(bounded, "first bytes [... cut: the line had 5000000 bytes]");
}

TEST(BoundLogLineTest, ReplacementCharsCountTowardsTheBound) {
  // 8 KiB of invalid bytes triple in size as U+FFFD: still within the bound once cut.
  const std::string bounded = BoundLogLine(std::string(kMaxLogLineBytes, '\xFF'));
  EXPECT_LE(bounded.size(), kMaxLogLineBytes);
  EXPECT_TRUE(IsValidUtf8(bounded));
  EXPECT_THAT(bounded, EndsWith("bytes]"));
}

}  // namespace
}  // namespace onset::common
