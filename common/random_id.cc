#include "common/random_id.h"

#include <openssl/rand.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

namespace onset::common {

std::string RandomHex(int bytes) {
  std::vector<unsigned char> buf(static_cast<size_t>(bytes));
  if (bytes > 0 && RAND_bytes(buf.data(), bytes) != 1) {
    std::fprintf(stderr, "fatal: OpenSSL RAND_bytes failed\n");
    std::abort();
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(2 * buf.size());
  for (unsigned char b : buf) {
    hex += kHex[b >> 4];
    hex += kHex[b & 0xf];
  }
  return hex;
}

}  // namespace onset::common
