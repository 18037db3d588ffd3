#include "base/posix_io.h"

#include <fcntl.h>
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

}  // namespace
}  // namespace onset::base
