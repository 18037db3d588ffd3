// A self-signed certificate for tests of TLS, made with OpenSSL in memory: an EC P-256 key and a
// certificate for "localhost" and 127.0.0.1 that is its own CA, valid from an hour ago for a day.
#pragma once

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <string>

namespace onset::testutil {

struct SelfSigned {
  std::string cert_pem;
  std::string key_pem;
};

inline std::string BioText(BIO* bio) {
  char* data = nullptr;
  long size = BIO_get_mem_data(bio, &data);
  return std::string(data, static_cast<size_t>(size));
}

inline void AddExtension(X509* cert, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, cert, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
}

// Empty strings if OpenSSL fails (the test's TLS set-up then fails visibly).
inline SelfSigned MakeSelfSigned(const char* common_name = "localhost") {
  SelfSigned out;
  EVP_PKEY* key = EVP_EC_gen("P-256");
  X509* cert = X509_new();
  if (key == nullptr || cert == nullptr) return out;
  X509_set_version(cert, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert), 1);
  X509_gmtime_adj(X509_getm_notBefore(cert), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert), 24 * 3600);
  X509_set_pubkey(cert, key);
  X509_NAME* name = X509_get_subject_name(cert);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(common_name), -1, -1, 0);
  X509_set_issuer_name(cert, name);
  AddExtension(cert, NID_basic_constraints, "critical,CA:TRUE");
  AddExtension(cert, NID_subject_alt_name, "DNS:localhost,IP:127.0.0.1");
  if (X509_sign(cert, key, EVP_sha256()) > 0) {
    BIO* cert_bio = BIO_new(BIO_s_mem());
    BIO* key_bio = BIO_new(BIO_s_mem());
    PEM_write_bio_X509(cert_bio, cert);
    PEM_write_bio_PrivateKey(key_bio, key, nullptr, nullptr, 0, nullptr, nullptr);
    out.cert_pem = BioText(cert_bio);
    out.key_pem = BioText(key_bio);
    BIO_free(cert_bio);
    BIO_free(key_bio);
  }
  X509_free(cert);
  EVP_PKEY_free(key);
  return out;
}

}  // namespace onset::testutil
