// The hand-written SHA-256 against the FIPS 180-4 examples, and against OpenSSL's for every
// message length up to 200 bytes: each way the padding can fall (55 bytes: the length still fits
// the last block; 56..63: it spills into a new one; 64, 119, 120: one block more).
#include "base/sha256.h"

#include <gtest/gtest.h>

#include <string>

#ifdef ONSET_TEST_WITH_OPENSSL
#include <openssl/evp.h>
#endif

namespace onset::base {
namespace {

TEST(Sha256HexTest, MatchesTheFipsExamples) {
  EXPECT_EQ(Sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  // 448 bits: the padding needs a second block.
  EXPECT_EQ(Sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  // 896 bits.
  EXPECT_EQ(Sha256Hex("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmno"
                      "ijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu"),
            "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
  EXPECT_EQ(Sha256Hex(std::string(1'000'000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256HexTest, HashesBytesNotCharacters) {
  // NUL and bytes above 0x7f are message bytes like any other.
  EXPECT_NE(Sha256Hex(std::string("a\0b", 3)), Sha256Hex("ab"));
  EXPECT_EQ(Sha256Hex(std::string(1, '\0')),
            "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d");
  EXPECT_EQ(Sha256Hex("\xff"), "a8100ae6aa1940d0b663bb31cd466142ebbdbd5187131b92d93818987832eb89");
}

#ifdef ONSET_TEST_WITH_OPENSSL
std::string OpenSslSha256Hex(const std::string& data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  if (EVP_Digest(data.data(), data.size(), digest, &size, EVP_sha256(), nullptr) != 1) return "";
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  for (unsigned int i = 0; i < size; ++i) {
    hex += kHex[digest[i] >> 4];
    hex += kHex[digest[i] & 0xf];
  }
  return hex;
}
#endif

TEST(Sha256HexTest, AgreesWithOpenSslForEveryLengthUpTo200) {
#ifdef ONSET_TEST_WITH_OPENSSL
  std::string message;
  for (size_t length = 0; length <= 200; ++length) {
    const std::string expected = OpenSslSha256Hex(message);
    ASSERT_EQ(expected.size(), 64u);
    EXPECT_EQ(Sha256Hex(message), expected) << length << " bytes";
    // Every byte value turns up, high bits included.
    message.push_back(static_cast<char>((length * 167 + 13) & 0xff));
  }
#else
  GTEST_SKIP() << "built without OpenSSL: no second SHA-256 to compare with";
#endif
}

}  // namespace
}  // namespace onset::base
