#include "base/durable_file.h"

#include <dirent.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <csignal>
#include <fstream>
#include <iterator>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/testing/temp_dir.h"

namespace onset::base {
namespace {

using ::testing::MatchesRegex;
using testutil::TempDir;

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

mode_t ModeOf(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

// The names in `dir`, without . and ..
std::set<std::string> Names(const std::string& dir) {
  std::set<std::string> names;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (const dirent* e = ::readdir(d)) names.insert(e->d_name);
    ::closedir(d);
  }
  names.erase(".");
  names.erase("..");
  return names;
}

// Sets the umask for one test.
class Umask {
 public:
  explicit Umask(mode_t mask) : old_(::umask(mask)) {}
  ~Umask() { ::umask(old_); }

 private:
  mode_t old_;
};

TEST(WriteFileDurablyTest, WritesEveryByteAndLeavesNoTemporaryFile) {
  TempDir dir;
  const std::string path = dir.File("f");
  const std::string bytes("one\0two\xff\n", 9);
  EXPECT_EQ(TryWriteFileDurably(path, bytes), std::nullopt);
  EXPECT_EQ(Slurp(path), bytes);
  EXPECT_EQ(Names(dir.path()), (std::set<std::string>{"f"}));
  EXPECT_EQ(TryWriteFileDurably(dir.File("empty"), ""), std::nullopt);
  EXPECT_EQ(Slurp(dir.File("empty")), "");
}

TEST(WriteFileDurablyTest, ReplacesAnExistingFile) {
  TempDir dir;
  const std::string path = dir.Write("f", "a longer old content\n");
  WriteFileDurably(path, "new\n");
  EXPECT_EQ(Slurp(path), "new\n");
  // A temporary file of another writer (or a crash) is never written to nor truncated: each
  // write has one of its own.
  dir.Write("f.tmp", "stray");
  WriteFileDurably(path, "newer\n");
  EXPECT_EQ(Slurp(path), "newer\n");
  EXPECT_EQ(Slurp(dir.File("f.tmp")), "stray");
  EXPECT_EQ(Names(dir.path()), (std::set<std::string>{"f", "f.tmp"}));
}

TEST(WriteFileDurablyTest, AGivenModeIsExactAndTheDefaultFollowsTheUmask) {
  TempDir dir;
  Umask umask(027);
  WriteFileDurably(dir.File("default"), "x");
  EXPECT_EQ(ModeOf(dir.File("default")), 0640u);
  WriteFileDurably(dir.File("secret"), "x", {0600});
  EXPECT_EQ(ModeOf(dir.File("secret")), 0600u);
  WriteFileDurably(dir.File("wide"), "x", {0664});  // the umask does not narrow it
  EXPECT_EQ(ModeOf(dir.File("wide")), 0664u);
  // Replacing a file gives the new one the mode asked for.
  WriteFileDurably(dir.File("wide"), "y", {0600});
  EXPECT_EQ(ModeOf(dir.File("wide")), 0600u);
}

TEST(WriteFileDurablyTest, KeepLeavesAnExistingFileAlone) {
  TempDir dir;
  const std::string path = dir.File("token");
  EXPECT_EQ(TryWriteFileDurably(path, "first\n", {0600, IfExists::kKeep}), std::nullopt);
  EXPECT_EQ(Slurp(path), "first\n");
  EXPECT_EQ(ModeOf(path), 0600u);
  EXPECT_EQ(TryWriteFileDurably(path, "second\n", {0600, IfExists::kKeep}), std::nullopt);
  EXPECT_EQ(Slurp(path), "first\n");
  EXPECT_EQ(Names(dir.path()), (std::set<std::string>{"token"}));
}

TEST(WriteFileDurablyTest, OfRacingKeepersOneWinsWhole) {
  TempDir dir;
  const std::string path = dir.File("token");
  std::vector<std::string> errors(8);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < errors.size(); ++i) {
    threads.emplace_back([&, i] {
      const std::string bytes = std::string(4096, static_cast<char>('a' + i)) + "\n";
      errors[i] = TryWriteFileDurably(path, bytes, {std::nullopt, IfExists::kKeep}).value_or("");
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(errors, std::vector<std::string>(errors.size()));
  const std::string won = Slurp(path);
  ASSERT_EQ(won.size(), 4097u);
  EXPECT_EQ(won, std::string(4096, won[0]) + "\n");
  EXPECT_EQ(Names(dir.path()), (std::set<std::string>{"token"}));
}

TEST(WriteFileDurablyTest, AnErrorNamesTheFileAndWhatFailed) {
  TempDir dir;
  const std::string missing = dir.File("no/such/dir/f");
  std::optional<std::string> error = TryWriteFileDurably(missing, "x");
  ASSERT_TRUE(error.has_value());
  EXPECT_THAT(*error, MatchesRegex(missing + "\\.tmp-[0-9]+-[0-9a-f]{16}: cannot create: No such "
                                             "file or directory"));
  try {
    WriteFileDurably(missing, "x");
    ADD_FAILURE() << "no exception";
  } catch (const std::runtime_error& e) {
    // Each write has a temporary name of its own.
    EXPECT_THAT(e.what(), MatchesRegex(missing + "\\.tmp-[0-9]+-[0-9a-f]{16}: cannot create: No "
                                                 "such file or directory"));
  }
}

TEST(WriteFileDurablyTest, AFailedRenameLeavesWhatWasThereAndNoTemporaryFile) {
  TempDir dir;
  // A directory with something in it where the file should go: rename() cannot replace it.
  ASSERT_EQ(::mkdir(dir.File("d").c_str(), 0755), 0);
  dir.Write("d/inside", "kept");
  std::optional<std::string> error = TryWriteFileDurably(dir.File("d"), "x");
  ASSERT_TRUE(error.has_value());
  EXPECT_THAT(*error, MatchesRegex(dir.File("d") + "\\.tmp-[0-9]+-[0-9a-f]{16}: cannot rename into "
                                                   "place: .*"));
  EXPECT_EQ(Names(dir.path()), (std::set<std::string>{"d"}));
  EXPECT_EQ(Slurp(dir.File("d/inside")), "kept");
}

TEST(WriteFileDurablyTest, AFailedWriteLeavesNoTemporaryFile) {
  TempDir dir;
  const std::string path = dir.Write("f", "old");
  // Files may grow to 16 bytes: the write fails with EFBIG (SIGXFSZ ignored).
  struct rlimit old_limit {};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old_limit), 0);
  void (*old_handler)(int) = std::signal(SIGXFSZ, SIG_IGN);
  struct rlimit small = old_limit;
  small.rlim_cur = 16;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  std::optional<std::string> error = TryWriteFileDurably(path, std::string(100, 'x'));
  ::setrlimit(RLIMIT_FSIZE, &old_limit);
  std::signal(SIGXFSZ, old_handler);
  ASSERT_TRUE(error.has_value());
  EXPECT_THAT(*error,
              MatchesRegex(path + "\\.tmp-[0-9]+-[0-9a-f]{16}: cannot write: File too large"));
  EXPECT_EQ(Slurp(path), "old");
  EXPECT_EQ(Names(dir.path()), (std::set<std::string>{"f"}));
}

TEST(ReadFileTest, ReadsTheWholeFileOrNamesIt) {
  TempDir dir;
  const std::string bytes(200'000, 'z');
  std::string out;
  EXPECT_EQ(ReadFile(dir.Write("f", bytes), &out), std::nullopt);
  EXPECT_EQ(out, bytes);
  EXPECT_EQ(ReadFile(dir.File("none"), &out),
            dir.File("none") + ": cannot open: No such file or directory");
}

TEST(MakeDirsTest, MakesEveryLevelAndNamesTheOneItCannotMake) {
  TempDir dir;
  MakeDirs(dir.File("a/b/c"));
  EXPECT_EQ(Names(dir.File("a/b")), (std::set<std::string>{"c"}));
  MakeDirs(dir.File("a/b/c"));  // already there
  dir.Write("file", "");
  try {
    MakeDirs(dir.File("file/sub"));
    ADD_FAILURE() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()),
              dir.File("file/sub") + ": cannot create directory: Not a directory");
  }
}

}  // namespace
}  // namespace onset::base
