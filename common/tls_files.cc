#include "common/tls_files.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include "base/posix_io.h"

namespace onset::common {
namespace {

struct BioFree {
  void operator()(BIO* bio) const { BIO_free(bio); }
};
struct X509Free {
  void operator()(X509* x) const { X509_free(x); }
};
struct PkeyFree {
  void operator()(EVP_PKEY* key) const { EVP_PKEY_free(key); }
};
using Bio = std::unique_ptr<BIO, BioFree>;
using Certificate = std::unique_ptr<X509, X509Free>;
using PrivateKey = std::unique_ptr<EVP_PKEY, PkeyFree>;

// PEM files of a few certificates are kilobytes; a CA bundle is a few hundred.
constexpr size_t kMaxPemFileBytes = 16 * 1024 * 1024;

// The whole file, read through base::OpenRegularFile (a FIFO is refused, never waited on) and
// at most kMaxPemFileBytes.
absl::StatusOr<std::string> ReadFile(const std::string& path, const char* what) {
  const base::OpenedFile opened = base::OpenRegularFile(path);
  if (opened.fd < 0) {
    return absl::NotFoundError(std::string(what) + " " + path + " cannot be read: " + opened.error);
  }
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{opened.fd};
  std::string text;
  bool truncated = false;
  if (const int err = base::ReadUpTo(opened.fd, kMaxPemFileBytes, &text, &truncated); err != 0) {
    return absl::NotFoundError(std::string(what) + " " + path +
                               " cannot be read: " + std::strerror(err));
  }
  if (truncated) {
    return absl::InvalidArgumentError(std::string(what) + " " + path + " is larger than " +
                                      std::to_string(kMaxPemFileBytes / (1024 * 1024)) +
                                      " MiB: not a PEM file");
  }
  return text;
}

// Refuses to ask for a passphrase: OpenSSL's default would prompt on the terminal.
int NoPassphrase(char*, int, int, void*) { return 0; }

Bio MemoryBio(const std::string& pem) {
  return Bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
}

// The first certificate in `pem`, or null.
Certificate FirstCertificate(const std::string& pem) {
  Bio bio = MemoryBio(pem);
  Certificate x509(bio ? PEM_read_bio_X509(bio.get(), nullptr, NoPassphrase, nullptr) : nullptr);
  ERR_clear_error();  // a failed parse leaves errors that later OpenSSL users would see
  return x509;
}

}  // namespace

absl::StatusOr<TlsKeyPair> ReadTlsKeyPair(const std::string& cert_file,
                                          const std::string& key_file) {
  TlsKeyPair pair;
  absl::StatusOr<std::string> cert = ReadFile(cert_file, "TLS certificate");
  if (!cert.ok()) return cert.status();
  absl::StatusOr<std::string> key = ReadFile(key_file, "TLS key");
  if (!key.ok()) return key.status();
  Certificate x509 = FirstCertificate(*cert);
  if (!x509) {
    return absl::InvalidArgumentError("TLS certificate " + cert_file + " holds no PEM certificate");
  }
  Bio key_bio = MemoryBio(*key);
  PrivateKey pkey(key_bio ? PEM_read_bio_PrivateKey(key_bio.get(), nullptr, NoPassphrase, nullptr)
                          : nullptr);
  ERR_clear_error();
  if (!pkey) {
    return absl::InvalidArgumentError("TLS key " + key_file +
                                      " holds no PEM private key (or one with a passphrase)");
  }
  const bool matches = X509_check_private_key(x509.get(), pkey.get()) == 1;
  ERR_clear_error();
  if (!matches) {
    return absl::InvalidArgumentError("TLS key " + key_file + " does not belong to certificate " +
                                      cert_file);
  }
  pair.cert_chain_pem = std::move(*cert);
  pair.private_key_pem = std::move(*key);
  return pair;
}

absl::StatusOr<std::string> ReadTlsRootCertificates(const std::string& ca_file) {
  absl::StatusOr<std::string> pem = ReadFile(ca_file, "TLS CA file");
  if (!pem.ok()) return pem.status();
  if (!FirstCertificate(*pem)) {
    return absl::InvalidArgumentError("TLS CA file " + ca_file + " holds no PEM certificate");
  }
  return pem;
}

}  // namespace onset::common
