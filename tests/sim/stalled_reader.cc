#include "tests/sim/stalled_reader.h"

#include <grpc/grpc.h>
#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>
#include <grpcpp/support/channel_arguments.h>

#include "onset/v1/onset.grpc.pb.h"

namespace onset::sim {
namespace {

int64_t WallMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string CodeName(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::OK:
      return "OK";
    case grpc::StatusCode::CANCELLED:
      return "CANCELLED";
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return "DEADLINE_EXCEEDED";
    case grpc::StatusCode::UNAVAILABLE:
      return "UNAVAILABLE";
    default:
      return "code " + std::to_string(static_cast<int>(code));
  }
}

// Reads what the stream still sends, then its status.
template <typename Message>
grpc::Status Drain(grpc::ClientReaderInterface<Message>* reader, StalledReader::Outcome* out) {
  Message message;
  while (reader->Read(&message)) {
    ++out->messages;
    out->bytes += static_cast<int64_t>(message.ByteSizeLong());
  }
  return reader->Finish();
}

}  // namespace

StalledReader::StalledReader(StalledCall call, std::string address, std::string token,
                             std::string study, std::string yaml, std::chrono::milliseconds stall,
                             std::chrono::milliseconds drain)
    : call_(call), opened_unix_ms_(WallMs()) {
  thread_ = std::thread([this, address = std::move(address), token = std::move(token),
                         study = std::move(study), yaml = std::move(yaml), stall,
                         drain] { Run(address, token, study, yaml, stall, drain); });
}

StalledReader::~StalledReader() {
  if (thread_.joinable()) thread_.join();
}

const StalledReader::Outcome& StalledReader::Wait() {
  if (thread_.joinable()) thread_.join();
  return outcome_;
}

void StalledReader::Run(std::string address, std::string token, std::string study, std::string yaml,
                        std::chrono::milliseconds stall, std::chrono::milliseconds drain) {
  // A window that never grows: what the reply may send ahead of the reader stays this much.
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_HTTP2_BDP_PROBE, 0);
  args.SetInt(GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES, kStalledReaderWindowBytes);
  args.SetMaxReceiveMessageSize(64 * 1024 * 1024);
  // A channel of its own, so that no other call shares its connection.
  args.SetInt("onset.sim.stalled_reader", static_cast<int>(opened_unix_ms_ & 0x7fffffff));
  std::shared_ptr<grpc::Channel> channel =
      grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args);
  std::unique_ptr<v1::StudyService::Stub> stub = v1::StudyService::NewStub(channel);
  grpc::ClientContext context;
  context.AddMetadata("authorization", "Bearer " + token);
  const auto opened = std::chrono::system_clock::now();
  context.set_deadline(opened + stall + drain);
  grpc::Status status;
  switch (call_) {
    case StalledCall::kBackup: {
      auto reader = stub->Backup(&context, v1::BackupRequest());
      std::this_thread::sleep_until(opened + stall);
      status = Drain(reader.get(), &outcome_);
      break;
    }
    case StalledCall::kWatch: {
      v1::WatchStudyRequest request;
      request.set_study(study);
      auto reader = stub->WatchStudy(&context, request);
      std::this_thread::sleep_until(opened + stall);
      status = Drain(reader.get(), &outcome_);
      break;
    }
    case StalledCall::kDryRun: {
      v1::SubmitStudyRequest request;
      request.set_source_name("stalled-dry-run.yaml");
      request.set_yaml(yaml);
      request.set_dry_run(true);
      auto reader = stub->SubmitStudy(&context, request);
      std::this_thread::sleep_until(opened + stall);
      status = Drain(reader.get(), &outcome_);
      break;
    }
  }
  outcome_.status = CodeName(status.error_code()) +
                    (status.error_message().empty() ? "" : ": " + status.error_message());
  outcome_.cancelled_by_coordinator = status.error_code() == grpc::StatusCode::CANCELLED;
  // Ran to its end, or to this client's deadline, having sent more than the window holds: the
  // write that filled the window waited for the reader all through the stall.
  outcome_.waited_throughout =
      (status.ok() || status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) &&
      outcome_.bytes > kStalledReaderWindowBytes;
  ended_unix_ms_ = WallMs();
  ended_ = true;
}

}  // namespace onset::sim
