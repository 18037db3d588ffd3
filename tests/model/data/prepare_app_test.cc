#include "model/data/prepare_app.h"

#include <gtest/gtest.h>

#include "model/data/token_file.h"
#include "tests/testing/temp_dir.h"

namespace onset::model {
namespace {

using testutil::TempDir;

std::optional<std::string> Parse(std::vector<const char*> args, PrepareFlags* flags) {
  args.insert(args.begin(), {"onset-train", "prepare"});
  return ParsePrepareFlags(static_cast<int>(args.size()), args.data(), flags);
}

TEST(PrepareAppTest, ParsesFlagsAndInputs) {
  PrepareFlags f;
  ASSERT_FALSE(Parse({"--out", "o.bin", "a.txt", "--dtype=uint32", "b.txt"}, &f));
  EXPECT_EQ(f.out, "o.bin");
  EXPECT_EQ(f.dtype, "uint32");
  EXPECT_EQ(f.inputs, (std::vector<std::string>{"a.txt", "b.txt"}));
  ASSERT_FALSE(Parse({"--out", "o.bin", "--", "--weird-name.txt"}, &f));
  EXPECT_EQ(f.inputs, (std::vector<std::string>{"--weird-name.txt"}));

  EXPECT_EQ(Parse({"a.txt"}, &f), "--out is required");
  EXPECT_EQ(Parse({"--out", "o.bin"}, &f), "prepare: name at least one text file");
  EXPECT_EQ(Parse({"--out", "o.bin", "--dtype", "int8", "a"}, &f),
            "--dtype: must be uint16 or uint32, got 'int8'");
  EXPECT_EQ(Parse({"--out", "o.bin", "--vocab", "9", "a"}, &f),
            "The following argument was not expected: --vocab");
  EXPECT_EQ(Parse({"a", "--out"}, &f), "--out: 1 required TEXT missing");
  EXPECT_EQ(Parse({"a", "--out", ""}, &f), "--out: must not be empty");
  ASSERT_FALSE(Parse({"-h"}, &f));
  EXPECT_TRUE(f.help);
}

TEST(PrepareAppTest, WritesEveryByteAsATokenWithNewlinesBetweenFiles) {
  TempDir dir;
  PrepareFlags f;
  f.out = dir.File("out.bin");
  f.inputs = {dir.Write("a.txt", "ab"), dir.Write("empty.txt", ""), dir.Write("b.txt", "\xff\n"),
              dir.Write("c.txt", "z")};
  int64_t tokens = 0;
  ASSERT_FALSE(PrepareTokenFile(f, &tokens));
  EXPECT_EQ(tokens, 6);  // a b \n ÿ \n z
  std::string error;
  auto file = TokenFile::Open(f.out, TokenDtype::kUint16, 256, &error);
  ASSERT_NE(file, nullptr) << error;
  std::vector<Token> got;
  for (int64_t i = 0; i < file->size(); ++i) got.push_back(file->at(i));
  EXPECT_EQ(got, (std::vector<Token>{'a', 'b', '\n', 255, '\n', 'z'}));

  f.dtype = "uint32";
  ASSERT_FALSE(PrepareTokenFile(f, &tokens));
  file = TokenFile::Open(f.out, TokenDtype::kUint32, 256, &error);
  ASSERT_NE(file, nullptr) << error;
  EXPECT_EQ(file->size(), 6);
  EXPECT_EQ(file->at(3), 255);
}

TEST(PrepareAppTest, ReportsUnreadableAndEmptyInputs) {
  TempDir dir;
  PrepareFlags f;
  f.out = dir.File("out.bin");
  f.inputs = {dir.File("missing.txt")};
  int64_t tokens = 0;
  auto error = PrepareTokenFile(f, &tokens);
  ASSERT_TRUE(error);
  EXPECT_EQ(error->rfind(dir.File("missing.txt") + ":", 0), 0u) << *error;
  f.inputs = {dir.Write("empty.txt", "")};
  EXPECT_EQ(PrepareTokenFile(f, &tokens),
            "prepare: the input files hold no text: nothing to write");
}

}  // namespace
}  // namespace onset::model
