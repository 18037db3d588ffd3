#include "model/data/token_file.h"

#include <gtest/gtest.h>

#include "tests/testing/fifo.h"
#include "tests/testing/temp_dir.h"

namespace onset::model {
namespace {

using testutil::TempDir;

TEST(TokenFileTest, ReadsUint16AndUint32LittleEndian) {
  TempDir dir;
  std::string error;
  auto f16 = TokenFile::Open(dir.WriteTokens<uint16_t>("a.bin", {0, 1, 255, 256, 65535}),
                             TokenDtype::kUint16, 65536, &error);
  ASSERT_NE(f16, nullptr) << error;
  ASSERT_EQ(f16->size(), 5);
  EXPECT_EQ(f16->at(2), 255);
  EXPECT_EQ(f16->at(3), 256);
  EXPECT_EQ(f16->at(4), 65535);

  auto f32 = TokenFile::Open(dir.WriteTokens<uint32_t>("b.bin", {7, 50256, 70000}),
                             TokenDtype::kUint32, 70001, &error);
  ASSERT_NE(f32, nullptr) << error;
  ASSERT_EQ(f32->size(), 3);
  EXPECT_EQ(f32->at(1), 50256);
  EXPECT_EQ(f32->at(2), 70000);
}

TEST(TokenFileTest, AnIdOutsideTheVocabularyNamesFileTokenAndByteOffset) {
  TempDir dir;
  const std::string path = dir.WriteTokens<uint16_t>("gpt2.bin", {10, 20, 50257, 30});
  std::string error;
  EXPECT_EQ(TokenFile::Open(path, TokenDtype::kUint16, 50257, &error), nullptr);
  EXPECT_EQ(error, path +
                       ": token id 50257 at token 2 (byte offset 4) is outside the vocabulary: "
                       "data.vocab_size is 50257");
}

TEST(TokenFileTest, RefusesMissingEmptyAndRaggedFiles) {
  TempDir dir;
  std::string error;
  EXPECT_EQ(TokenFile::Open(dir.File("missing.bin"), TokenDtype::kUint16, 256, &error), nullptr);
  EXPECT_NE(error.find("missing.bin: cannot open: No such file"), std::string::npos) << error;

  EXPECT_EQ(TokenFile::Open(dir.Write("empty.bin", ""), TokenDtype::kUint16, 256, &error), nullptr);
  EXPECT_NE(error.find("empty.bin: the file is empty"), std::string::npos) << error;

  EXPECT_EQ(TokenFile::Open(dir.Write("odd.bin", "abcdef"), TokenDtype::kUint32, 1 << 30, &error),
            nullptr);
  EXPECT_NE(error.find("odd.bin: 6 bytes is not a whole number of uint32 tokens"),
            std::string::npos)
      << error;

  EXPECT_EQ(TokenFile::Open(dir.path(), TokenDtype::kUint16, 256, &error), nullptr);
  EXPECT_NE(error.find("not a regular file"), std::string::npos) << error;
}

TEST(TokenFileTest, AFifoIsRefusedWithoutWaitingForAWriter) {
  TempDir dir;
  const std::string fifo = testutil::MakeFifo(dir.File("tokens.bin"));
  std::string error;
  std::unique_ptr<TokenFile> file;
  EXPECT_TRUE(testutil::ReturnsWithoutAWriter(
      fifo, [&] { file = TokenFile::Open(fifo, TokenDtype::kUint16, 256, &error); }));
  EXPECT_EQ(file, nullptr);
  EXPECT_NE(error.find("tokens.bin: not a regular file (a FIFO)"), std::string::npos) << error;
}

TEST(TokenFileTest, ParsesDtypeNames) {
  EXPECT_EQ(ParseTokenDtype("uint16"), TokenDtype::kUint16);
  EXPECT_EQ(ParseTokenDtype("uint32"), TokenDtype::kUint32);
  EXPECT_EQ(ParseTokenDtype("int32"), std::nullopt);
  EXPECT_EQ(TokenBytes(TokenDtype::kUint16), 2);
  EXPECT_EQ(TokenBytes(TokenDtype::kUint32), 4);
}

}  // namespace
}  // namespace onset::model
