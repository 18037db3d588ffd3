#include "common/grpc_status.h"

#include <gtest/gtest.h>

namespace onset::common {
namespace {

TEST(GrpcStatusTest, RoundTripsCodeAndMessage) {
  for (absl::Status s : {absl::OkStatus(), absl::NotFoundError("no study named 'x'"),
                         absl::FailedPreconditionError("lease expired"),
                         absl::InvalidArgumentError("s.yaml:3: train.lr: must be a number")}) {
    grpc::Status g = ToGrpcStatus(s);
    EXPECT_EQ(static_cast<int>(g.error_code()), static_cast<int>(s.code()));
    EXPECT_EQ(FromGrpcStatus(g), s);
  }
  EXPECT_EQ(ToGrpcStatus(absl::NotFoundError("x")).error_code(), grpc::StatusCode::NOT_FOUND);
}

TEST(GrpcStatusTest, ClientSideErrorsNameTheRpcAndPeer) {
  absl::Status s = FromGrpcStatus(grpc::Status(grpc::StatusCode::UNAVAILABLE, "connection refused"),
                                  "LeaseJob", "127.0.0.1:7070");
  EXPECT_EQ(s, absl::UnavailableError("LeaseJob to 127.0.0.1:7070: connection refused"));
}

TEST(GrpcStatusTest, AServersErrorsCarryDetailsThatTellThemFromTheClientLibrarys) {
  const grpc::Status sent =
      ToGrpcStatus(absl::UnavailableError("database write failed: database is locked (x.db)"));
  EXPECT_EQ(sent.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(sent.error_message(), "database write failed: database is locked (x.db)");
  EXPECT_TRUE(SentByServer(sent));
  // A google.rpc.Status: field 1 (code 14), field 2 (the message).
  EXPECT_EQ(sent.error_details(),
            std::string("\x08\x0e\x12\x30") + "database write failed: database is locked (x.db)");

  // What gRPC makes on the client when no answer comes.
  EXPECT_FALSE(SentByServer(
      grpc::Status(grpc::StatusCode::UNAVAILABLE, "failed to connect to all addresses")));
  EXPECT_FALSE(SentByServer(grpc::Status::OK));
  EXPECT_FALSE(SentByServer(ToGrpcStatus(absl::OkStatus())));
}

}  // namespace
}  // namespace onset::common
