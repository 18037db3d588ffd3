#include "common/grpc_status.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <string>

namespace onset::common {
namespace {

// google.rpc.Status {int32 code = 1; string message = 2;} in protobuf's wire format, written
// field by field: the message type itself is not part of the libraries onset builds with.
std::string RpcStatusDetails(int code, const std::string& message) {
  std::string out;
  {
    google::protobuf::io::StringOutputStream stream(&out);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.WriteTag((1 << 3) | 0);  // field 1, varint
    coded.WriteVarint32SignExtended(code);
    coded.WriteTag((2 << 3) | 2);  // field 2, length-delimited
    coded.WriteVarint32(static_cast<uint32_t>(message.size()));
    coded.WriteString(message);
  }
  return out;
}

}  // namespace

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  std::string message(status.message());
  const int code = static_cast<int>(status.code());
  std::string details = RpcStatusDetails(code, message);
  return grpc::Status(static_cast<grpc::StatusCode>(code), std::move(message), std::move(details));
}

absl::Status FromGrpcStatus(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()), status.error_message());
}

absl::Status FromGrpcStatus(const grpc::Status& status, std::string_view rpc,
                            std::string_view peer) {
  if (status.ok()) return absl::OkStatus();
  std::string message(rpc);
  message += " to ";
  message += peer;
  message += ": ";
  message += status.error_message();
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()), message);
}

bool SentByServer(const grpc::Status& status) {
  return !status.ok() && !status.error_details().empty();
}

}  // namespace onset::common
