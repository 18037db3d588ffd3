#include "common/tls_files.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/common/self_signed.h"
#include "tests/testing/fifo.h"
#include "tests/testing/temp_dir.h"

namespace onset::common {
namespace {

using ::testing::HasSubstr;

TEST(TlsFilesTest, ReadsAMatchingCertificateAndKey) {
  testutil::TempDir dir;
  testutil::SelfSigned tls = testutil::MakeSelfSigned();
  ASSERT_FALSE(tls.cert_pem.empty());
  absl::StatusOr<TlsKeyPair> pair =
      ReadTlsKeyPair(dir.Write("c.pem", tls.cert_pem), dir.Write("k.pem", tls.key_pem));
  ASSERT_TRUE(pair.ok()) << pair.status();
  EXPECT_EQ(pair->cert_chain_pem, tls.cert_pem);
  EXPECT_EQ(pair->private_key_pem, tls.key_pem);
  EXPECT_EQ(*ReadTlsRootCertificates(dir.File("c.pem")), tls.cert_pem);
}

TEST(TlsFilesTest, NamesTheBadFile) {
  testutil::TempDir dir;
  testutil::SelfSigned a = testutil::MakeSelfSigned();
  testutil::SelfSigned b = testutil::MakeSelfSigned();
  const std::string cert = dir.Write("a.crt", a.cert_pem);
  const std::string other_key = dir.Write("b.key", b.key_pem);
  const std::string junk = dir.Write("junk", "not pem\n");

  absl::StatusOr<TlsKeyPair> mismatched = ReadTlsKeyPair(cert, other_key);
  EXPECT_EQ(mismatched.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(mismatched.status().message(), HasSubstr("does not belong to certificate " + cert));

  absl::StatusOr<TlsKeyPair> bad_cert = ReadTlsKeyPair(junk, other_key);
  EXPECT_THAT(bad_cert.status().message(), HasSubstr(junk + " holds no PEM certificate"));
  absl::StatusOr<TlsKeyPair> bad_key = ReadTlsKeyPair(cert, junk);
  EXPECT_THAT(bad_key.status().message(), HasSubstr(junk + " holds no PEM private key"));
  // A certificate is not a key.
  EXPECT_EQ(ReadTlsKeyPair(cert, cert).status().code(), absl::StatusCode::kInvalidArgument);

  EXPECT_EQ(ReadTlsKeyPair(dir.File("none"), other_key).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(ReadTlsRootCertificates(junk).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ReadTlsRootCertificates(dir.File("none")).status().code(), absl::StatusCode::kNotFound);
}

TEST(TlsFilesTest, AFifoAsTheCaFileIsRefusedWithoutWaitingForAWriter) {
  testutil::TempDir dir;
  const std::string fifo = testutil::MakeFifo(dir.File("ca.pem"));
  absl::StatusOr<std::string> roots;
  EXPECT_TRUE(
      testutil::ReturnsWithoutAWriter(fifo, [&] { roots = ReadTlsRootCertificates(fifo); }));
  ASSERT_FALSE(roots.ok());
  EXPECT_THAT(roots.status().message(), HasSubstr("not a regular file (a FIFO)"));
}

}  // namespace
}  // namespace onset::common
