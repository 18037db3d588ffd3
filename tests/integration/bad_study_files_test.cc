// Bad study files against the real binaries: `onset submit --dry-run FILE` to a real onsetd.
// Each is refused with "file:line: ..." and exit 2 (1 for a file that cannot be read), and
// onsetd keeps serving: none of them may crash it (a 613-byte alias bomb used to).
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/integration/harness.h"

namespace onset {
namespace {

namespace fs = std::filesystem;
using testing::Child;
using testing::Finish;
using ::testing::HasSubstr;
using testing::HaveBinaries;
using testing::Ran;
using testing::Start;
using ::testing::StartsWith;
using worker::ExitStatus;
using worker::PosixProcessLauncher;

constexpr char kGoodStudy[] = R"(name: good
model: {layers: 2, d_model: 32, heads: 2, seq_len: 64}
train: {batch_tokens: 1K, tokens: 20K}
grid:
  arch: [full, "swa:1"]
  window: [16]
)";

// 613 bytes: nine levels of nine aliases, 9^9 values once expanded.
constexpr char kBillionLaughs[] = R"(name: lol
description: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]
grid: {seeds: *i}
)";

class BadStudyFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("onset-bad-studies-" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(dir_);
  }

  std::string Write(const std::string& name, const std::string& bytes) {
    const fs::path path = dir_ / name;
    std::ofstream(path, std::ios::binary) << bytes;
    return path.string();
  }

  Ran DryRun(const testing::Daemon& daemon, const std::string& file) {
    Child child = Start(launcher_, "onset",
                        {"--coordinator", daemon.address, "--token-file", daemon.token_file,
                         "submit", "--dry-run", file});
    return Finish(child, std::chrono::seconds(60));
  }

  fs::path dir_;
  PosixProcessLauncher launcher_;
};

TEST_F(BadStudyFilesTest, AreRefusedWithTheirPlaceAndOnsetdKeepsServing) {
  std::string missing;
  if (!HaveBinaries({"onsetd", "onset"}, &missing)) GTEST_SKIP() << missing << " not built";
  testing::Daemon daemon = testing::StartDaemon(launcher_, dir_);
  ASSERT_FALSE(daemon.address.empty() || daemon.token.empty());

  struct Case {
    std::string file;
    int code;
    std::string err_prefix;
  };
  const std::string lol = Write("lol.yaml", kBillionLaughs);
  const std::string huge = Write("huge.yaml", "name: huge\ntrain:\n  lr: 1e400\n");
  const std::string tiny = Write("tiny.yaml", "name: tiny\ntrain:\n  lr: 1e-400\n");
  const std::string digits =
      Write("digits.yaml", "name: digits\ngrid:\n  tokens: [" + std::string(400, '9') + "K]\n");
  const std::string long_seq =
      Write("long.yaml",
            "name: long\nmodel: {layers: 2, d_model: 32, heads: 2}\ntrain: {batch_tokens: 4M}\n"
            "grid:\n  model.seq_len: [64, 2200000]\n");
  const std::string dots = Write("dots.yaml", "name: ..\n");
  const std::string two_docs = Write("two.yaml", std::string(kGoodStudy) + "---\nname: other\n");
  const std::string latin1 = Write("latin1.yaml", "name: caf\xe9\n");
  const std::vector<Case> cases = {
      {lol, 2, lol + ":2: anchor &a: YAML anchors and aliases are not allowed"},
      {huge, 2, huge + ":3: train.lr: number '1e400' is out of range"},
      {tiny, 2, tiny + ":3: train.lr: number '1e-400' is too small: it would read as 0"},
      {digits, 2, digits + ":3: grid.tokens: must be at most 1000000000000000 tokens"},
      {long_seq, 2, long_seq + ":5: grid.model.seq_len: gives default eval.niah_lengths"},
      {dots, 2, dots + ":1: name: '..' must start with a letter or a digit"},
      {two_docs, 2, two_docs + ":7: a study file is one YAML document"},
      {latin1, 2, latin1 + ":1: the file is not UTF-8 text (byte 0xe9 at offset 9)"},
      {dir_.string(), 2, dir_.string() + " is a directory, not a study file"},
      {"/dev/zero", 2, "/dev/zero:1: the file is more than 1048576 bytes"},
      {(dir_ / "nope.yaml").string(), 1, "cannot open " + (dir_ / "nope.yaml").string()},
  };
  for (const Case& c : cases) {
    const Ran ran = DryRun(daemon, c.file);
    EXPECT_EQ(ran.code, c.code) << c.file << "\n" << ran.err;
    EXPECT_THAT(ran.err, StartsWith(c.err_prefix)) << c.file;
  }

  // Still serving, and the good file goes through.
  const Ran good = DryRun(daemon, Write("good.yaml", kGoodStudy));
  EXPECT_EQ(good.code, 0) << good.err;
  ASSERT_TRUE(daemon.child.process);
  EXPECT_EQ(daemon.child.process->Terminate(std::chrono::seconds(10)).exit_code, 0)
      << daemon.child.process->StderrTail();
}

}  // namespace
}  // namespace onset
