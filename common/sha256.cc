#include "common/sha256.h"

#include <openssl/evp.h>

#include <cstdlib>
#include <cstdio>

namespace onset::common {

std::string Sha256Hex(std::string_view data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  // One-shot EVP_Digest cannot fail for SHA-256 short of memory exhaustion; that is fatal.
  if (EVP_Digest(data.data(), data.size(), digest, &size, EVP_sha256(), nullptr) != 1) {
    std::fprintf(stderr, "fatal: OpenSSL EVP_Digest(SHA-256) failed\n");
    std::abort();
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(2 * size);
  for (unsigned int i = 0; i < size; ++i) {
    hex += kHex[digest[i] >> 4];
    hex += kHex[digest[i] & 0xf];
  }
  return hex;
}

}  // namespace onset::common
