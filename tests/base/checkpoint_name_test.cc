#include "base/checkpoint_name.h"

#include <gtest/gtest.h>

namespace onset::base {
namespace {

TEST(CheckpointNameTest, TheTokensOfANameAreWhatItWasNamedFor) {
  EXPECT_EQ(CheckpointFileName(524288), "ckpt-000000524288.pt");
  for (int64_t tokens : {int64_t{0}, int64_t{524288}, int64_t{999'999'999'999}}) {
    EXPECT_EQ(CheckpointTokens(CheckpointFileName(tokens)), tokens);
    EXPECT_EQ(CheckpointTokens("/data/checkpoints/s/c/attempt-2/" + CheckpointFileName(tokens)),
              tokens);
  }
}

TEST(CheckpointNameTest, AnyOtherNameHasNoTokens) {
  for (const char* name :
       {"", "ckpt-.pt", "ckpt-00000052428.pt", "ckpt-0000005242888.pt", "ckpt-00000052428x.pt",
        "ckpt-000000524288.pt.tmp", "ckpt-000000524288.pt/", "model.safetensors",
        "/data/ckpt-000000524288"}) {
    EXPECT_FALSE(CheckpointTokens(name).has_value()) << name;
  }
}

}  // namespace
}  // namespace onset::base
