#include "base/posix_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <string>
#include <thread>

#include <gtest/gtest.h>

namespace onset::base {
namespace {

TEST(WriteAllTest, WritesAllOfABufferLargerThanAPipeHolds) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  std::string data(1 << 20, '\0');
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i * 7);
  std::string read_back;
  std::thread reader([&] {
    char buf[4096];
    ssize_t n;
    while ((n = ::read(fds[0], buf, sizeof buf)) > 0) read_back.append(buf, static_cast<size_t>(n));
  });
  EXPECT_EQ(WriteAll(fds[1], data), 0);
  ::close(fds[1]);
  reader.join();
  ::close(fds[0]);
  EXPECT_EQ(read_back, data);
}

TEST(WriteAllTest, ReturnsTheErrnoOfTheFailedWrite) {
  const int full = ::open("/dev/full", O_WRONLY | O_CLOEXEC);
  if (full >= 0) {
    EXPECT_EQ(WriteAll(full, "x"), ENOSPC);
    ::close(full);
  }
  const int read_only = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(read_only, 0);
  EXPECT_EQ(WriteAll(read_only, "x"), EBADF);
  ::close(read_only);
  EXPECT_EQ(WriteAll(read_only, ""), 0) << "nothing to write, nothing written";

  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  ::close(fds[0]);
  void (*old_handler)(int) = std::signal(SIGPIPE, SIG_IGN);
  EXPECT_EQ(WriteAll(fds[1], "x"), EPIPE);
  std::signal(SIGPIPE, old_handler);
  ::close(fds[1]);
}

TEST(ReadUpToTest, ReadsAWholeFileAndStopsAtTheLimitSayingSo) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  ASSERT_EQ(WriteAll(fds[1], "abcdef"), 0);
  ::close(fds[1]);
  std::string out;
  bool truncated = true;
  EXPECT_EQ(ReadUpTo(fds[0], 6, &out, &truncated), 0);
  EXPECT_EQ(out, "abcdef");  // exactly the limit is whole
  EXPECT_FALSE(truncated);
  ::close(fds[0]);

  ASSERT_EQ(::pipe(fds), 0);
  ASSERT_EQ(WriteAll(fds[1], "abcdef"), 0);
  ::close(fds[1]);
  out.clear();
  EXPECT_EQ(ReadUpTo(fds[0], 4, &out, &truncated), 0);
  EXPECT_EQ(out, "abcd");
  EXPECT_TRUE(truncated);
  ::close(fds[0]);

  EXPECT_EQ(ReadUpTo(-1, 4, &out), EBADF);
}

TEST(OpenRegularFileTest, OpensFilesAndRefusesOtherKindsAtOnce) {
  char dir[] = "/tmp/onset-posix-io-XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  const std::string file = std::string(dir) + "/f";
  const int w = ::open(file.c_str(), O_WRONLY | O_CREAT, 0600);
  ASSERT_EQ(WriteAll(w, "text"), 0);
  ::close(w);
  OpenedFile opened = OpenRegularFile(file);
  ASSERT_GE(opened.fd, 0) << opened.error;
  std::string out;
  EXPECT_EQ(ReadUpTo(opened.fd, 100, &out), 0);  // blocking reads work: O_NONBLOCK is cleared
  EXPECT_EQ(out, "text");
  ::close(opened.fd);

  const std::string fifo = std::string(dir) + "/p";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  opened = OpenRegularFile(fifo);  // no writer: a blocking open would never return
  EXPECT_EQ(opened.fd, -1);
  EXPECT_EQ(opened.err, 0);
  EXPECT_EQ(opened.error, "not a regular file (a FIFO)");
  opened = OpenRegularFile(dir);
  EXPECT_EQ(opened.error, "not a regular file (a directory)");
  opened = OpenRegularFile(std::string(dir) + "/missing");
  EXPECT_EQ(opened.err, ENOENT);
  ::unlink(fifo.c_str());
  ::unlink(file.c_str());
  ::rmdir(dir);
}

}  // namespace
}  // namespace onset::base
