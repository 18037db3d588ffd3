#include "common/listen_address.h"

#include <gtest/gtest.h>

namespace onset::common {
namespace {

TEST(ListenAddressTest, HostOf) {
  EXPECT_EQ(HostOf("127.0.0.1:7070"), "127.0.0.1");
  EXPECT_EQ(HostOf("[::1]:0"), "[::1]");
  EXPECT_EQ(HostOf("node1:7070"), "node1");
  EXPECT_EQ(HostOf("7070"), "");
  EXPECT_EQ(HostOf(":7070"), "");
  EXPECT_EQ(HostOf("host:"), "");
  EXPECT_EQ(HostOf("host:70a"), "");
}

TEST(ListenAddressTest, LoopbackHosts) {
  for (const char* host : {"localhost", "127.0.0.1", "127.255.0.9", "[::1]", "[0:0:0:0:0:0:0:1]"}) {
    EXPECT_TRUE(IsLoopbackHost(host)) << host;
  }
  for (const char* host : {"0.0.0.0", "[::]", "10.1.2.3", "128.0.0.1", "node1", "", "::1",
                           "127.0.0.1.example.org", "[::ffff:10.0.0.1]", "localhost.evil"}) {
    EXPECT_FALSE(IsLoopbackHost(host)) << host;
  }
}

}  // namespace
}  // namespace onset::common
