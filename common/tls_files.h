// PEM files for TLS between the coordinator and its clients. Each is checked with OpenSSL as it
// is read, so that a wrong file fails at start with its name instead of at the first handshake.
#pragma once

#include <string>

#include "absl/status/statusor.h"

namespace onset::common {

// The coordinator's certificate chain and private key, as PEM text.
struct TlsKeyPair {
  std::string cert_chain_pem;
  std::string private_key_pem;
};

// Reads both files. InvalidArgument naming the file when it holds no PEM certificate or private
// key, or when the key does not belong to the (first) certificate; NotFound for a missing file.
absl::StatusOr<TlsKeyPair> ReadTlsKeyPair(const std::string& cert_file,
                                          const std::string& key_file);

// Reads the certificates a client trusts (a CA, or the coordinator's self-signed certificate).
// InvalidArgument naming the file when it holds no PEM certificate; NotFound for a missing file.
absl::StatusOr<std::string> ReadTlsRootCertificates(const std::string& ca_file);

}  // namespace onset::common
