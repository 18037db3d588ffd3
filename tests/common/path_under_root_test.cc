#include "common/path_under_root.h"

#include <gtest/gtest.h>

namespace onset::common {
namespace {

TEST(PathUnderRootTest, SafeComponents) {
  for (const char* ok : {"demo", "swa-window-sweep", "a.b", "x_1", "0123abcd", "a..b"}) {
    EXPECT_TRUE(IsSafePathComponent(ok)) << ok;
  }
  for (const std::string& bad :
       {std::string(""), std::string("."), std::string(".."), std::string("a/b"),
        std::string("/etc"), std::string("-rf"), std::string("a\tb"), std::string("a\x7f"),
        std::string("a\0b", 3), std::string(256, 'a')}) {
    EXPECT_FALSE(IsSafePathComponent(bad)) << bad;
  }
}

TEST(PathUnderRootTest, JoinsOnlyUnderTheRoot) {
  absl::StatusOr<std::string> p = JoinUnderRoot("/ckpt", {"demo", "0123abcd"});
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(*p, "/ckpt/demo/0123abcd");
  p = JoinUnderRoot("relative/root", {"s", "c"});
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(*p, "relative/root/s/c");

  p = JoinUnderRoot("/ckpt", {"..", "0123abcd"});
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(p.status().message(), "'..' cannot name a directory under /ckpt");
  EXPECT_FALSE(JoinUnderRoot("/ckpt", {"."}).ok());
  EXPECT_FALSE(JoinUnderRoot("/ckpt", {"a/../../etc"}).ok());
  EXPECT_FALSE(JoinUnderRoot("/ckpt", {"demo", ""}).ok());
}

}  // namespace
}  // namespace onset::common
