// A fresh directory under $TMPDIR (or /tmp) for one test, removed with everything in it when it
// goes out of scope. The one temporary-directory helper of every suite.
//
// Plain POSIX calls, no std::filesystem: libtorch.so exports its own copies of some
// std::filesystem symbols, which are not safe to call from binaries linked with it. No GoogleTest
// either: a directory that cannot be made throws, which fails the test that wanted it.
#pragma once

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace onset::testutil {

class TempDir {
 public:
  TempDir() {
    const char* tmpdir = std::getenv("TMPDIR");
    std::string tmpl = tmpdir != nullptr && *tmpdir != '\0' ? tmpdir : "/tmp";
    tmpl += "/onset-test-XXXXXX";
    if (::mkdtemp(tmpl.data()) == nullptr) {
      throw std::runtime_error("cannot create a temporary directory " + tmpl + ": " +
                               std::strerror(errno));
    }
    path_ = tmpl;
  }
  ~TempDir() {
    // Depth first, links not followed: a link to elsewhere goes, not what it points to. What
    // cannot be removed stays and the walk goes on.
    auto remove = [](const char* p, const struct stat*, int, struct FTW*) {
      ::remove(p);
      return 0;
    };
    ::nftw(path_.c_str(), remove, 16, FTW_DEPTH | FTW_PHYS);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  std::string File(const std::string& name) const { return path_ + "/" + name; }

  // Writes `bytes` to the file `name` and returns its path.
  std::string Write(const std::string& name, const std::string& bytes) const {
    std::ofstream(File(name), std::ios::binary) << bytes;
    return File(name);
  }

  // Writes `ids` as little-endian integers of T (uint16_t or uint32_t), as numpy's tofile does:
  // a token file.
  template <typename T>
  std::string WriteTokens(const std::string& name, const std::vector<int64_t>& ids) const {
    std::string bytes;
    for (int64_t id : ids) {
      for (size_t b = 0; b < sizeof(T); ++b)
        bytes.push_back(static_cast<char>((id >> (8 * b)) & 0xff));
    }
    return Write(name, bytes);
  }

 private:
  std::string path_;
};

}  // namespace onset::testutil
