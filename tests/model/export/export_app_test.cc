// The command line of onset-train's export, dump-logits, generate and niah-prompts subcommands.
#include "model/export/export_app.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace onset::model {
namespace {

std::optional<std::string> Parse(std::vector<const char*> args, ExportFlags* out) {
  args.insert(args.begin(), "onset-train");
  return ParseExportFlags(static_cast<int>(args.size()), args.data(), out);
}

TEST(ExportAppTest, RecognisesOnlyItsSubcommands) {
  const char* export_args[] = {"onset-train", "export"};
  const char* train_args[] = {"onset-train", "--config", "x.json"};
  EXPECT_TRUE(IsExportCommand(2, export_args));
  EXPECT_FALSE(IsExportCommand(3, train_args));
  EXPECT_FALSE(IsExportCommand(1, train_args));
}

TEST(ExportAppTest, ParsesExportFlags) {
  ExportFlags f;
  ASSERT_EQ(
      Parse({"export", "--config", "c.json", "--checkpoint=ck", "--out", "o", "--dtype", "bf16"},
            &f),
      std::nullopt);
  EXPECT_EQ(f.command, "export");
  EXPECT_EQ(f.config_path, "c.json");
  EXPECT_EQ(f.checkpoint, "ck");
  EXPECT_EQ(f.out_dir, "o");
  EXPECT_EQ(f.dtype, "bf16");
}

TEST(ExportAppTest, ParsesDumpLogitsFlags) {
  ExportFlags f;
  ASSERT_EQ(Parse({"dump-logits", "--config", "c.json", "--checkpoint", "ck", "--tokens",
                   "256,0,263", "--threads", "2"},
                  &f),
            std::nullopt);
  EXPECT_EQ(f.tokens, (std::vector<int64_t>{256, 0, 263}));
  EXPECT_EQ(f.threads, 2);
}

TEST(ExportAppTest, ErrorsNameTheFlag) {
  ExportFlags f;
  auto error = [&](std::vector<const char*> args) {
    return Parse(std::move(args), &f).value_or("");
  };
  EXPECT_NE(error({"export", "--config", "c", "--checkpoint", "k"}).find("--out"),
            std::string::npos);
  EXPECT_NE(error({"export", "--config", "c", "--checkpoint", "k", "--out", "o", "--dtype", "f16"})
                .find("--dtype"),
            std::string::npos);
  // --tokens belongs to dump-logits.
  const std::string misplaced =
      error({"export", "--config", "c", "--checkpoint", "k", "--out", "o", "--tokens", "1"});
  EXPECT_NE(misplaced.find("not expected"), std::string::npos) << misplaced;
  EXPECT_NE(misplaced.find("--tokens"), std::string::npos) << misplaced;
  // Ids past the vocabulary are refused once the config says how large it is.
  for (const char* bad : {"", "1,,2", "1,x", "-1", "1,"}) {
    EXPECT_NE(error({"dump-logits", "--config", "c", "--checkpoint", "k", "--tokens", bad})
                  .find("--tokens"),
              std::string::npos)
        << "'" << bad << "'";
  }
  EXPECT_NE(error({"dump-logits", "--config", "c", "--tokens", "1"}).find("--checkpoint"),
            std::string::npos);
  EXPECT_EQ(error({"dump-logits", "--config", "c", "--checkpoint", "k", "--tokens", "1",
                   "--threads", "0"}),
            "--threads: must be an integer between 1 and 1024, got '0'");
  EXPECT_EQ(error({"export", "--config", "c", "--checkpoint", "k", "--out"}),
            "--out: 1 required TEXT missing");
}

TEST(ExportAppTest, NiahPromptsNeedsAnOutputAndMayGoWithoutACheckpoint) {
  const char* args[] = {"onset-train", "niah-prompts"};
  EXPECT_TRUE(IsExportCommand(2, args));
  ExportFlags f;
  ASSERT_EQ(Parse({"niah-prompts", "--config", "c.json", "--out", "p.jsonl"}, &f), std::nullopt);
  EXPECT_EQ(f.command, "niah-prompts");
  EXPECT_EQ(f.out_dir, "p.jsonl");
  EXPECT_EQ(f.checkpoint, "");
  ASSERT_EQ(Parse({"niah-prompts", "--config", "c.json", "--out", "p.jsonl", "--checkpoint", "ck",
                   "--threads", "2"},
                  &f),
            std::nullopt);
  EXPECT_EQ(f.checkpoint, "ck");
  EXPECT_EQ(f.threads, 2);
  EXPECT_NE(Parse({"niah-prompts", "--config", "c.json"}, &f).value_or("").find("--out"),
            std::string::npos);
  const std::string misplaced =
      Parse({"niah-prompts", "--config", "c", "--out", "o", "--tokens", "1"}, &f).value_or("");
  EXPECT_NE(misplaced.find("--tokens"), std::string::npos) << misplaced;
}

TEST(ExportAppTest, HelpNeedsNoOtherFlag) {
  ExportFlags f;
  ASSERT_EQ(Parse({"dump-logits", "--help"}, &f), std::nullopt);
  EXPECT_TRUE(f.help);
  EXPECT_EQ(f.command, "dump-logits");
}

}  // namespace
}  // namespace onset::model
