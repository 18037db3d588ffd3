// A fresh directory under $TMPDIR for one test, removed with its files (one level deep) when
// the test ends. Plain POSIX calls: libtorch.so exports its own copies of some std::filesystem
// symbols, which are not safe to call from binaries linked with it.
#pragma once

#include <dirent.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

namespace onset::testutil {

class TempDir {
 public:
  TempDir() {
    std::string tmpl = std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp";
    tmpl += "/onset_test_XXXXXX";
    if (::mkdtemp(tmpl.data()) != nullptr) path_ = tmpl;
  }
  ~TempDir() {
    if (path_.empty()) return;
    if (DIR* d = ::opendir(path_.c_str())) {
      while (const dirent* e = ::readdir(d)) ::unlink((path_ + "/" + e->d_name).c_str());
      ::closedir(d);
    }
    ::rmdir(path_.c_str());
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

  // Writes `ids` as little-endian integers of T (uint16_t or uint32_t), as numpy's tofile does.
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
