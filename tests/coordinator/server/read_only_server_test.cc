// The read side of the coordinator over a database no coordinator serves: StudyService through an
// in-process channel, the dashboard over HTTP, both refusing writes and calls without the token.
#include "coordinator/server/read_only_server.h"

#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <nlohmann/json.hpp>

#include "common/clock.h"
#include "onset/v1/onset.grpc.pb.h"
#include "tests/coordinator/test_util.h"

namespace onset::coordinator {
namespace {

using ::testing::HasSubstr;
using testutil::TempDir;

constexpr char kToken[] = "0123456789abcdef0123456789abcdef";

struct Reply {
  int status = 0;
  std::string body;
};

// GET `target` from the HTTP server at "127.0.0.1:PORT", with `token` when not empty.
Reply HttpGet(const std::string& address, const std::string& target, const std::string& token) {
  namespace beast = boost::beast;
  namespace http = beast::http;
  using tcp = boost::asio::ip::tcp;
  boost::asio::io_context io;
  tcp::resolver resolver(io);
  beast::tcp_stream stream(io);
  stream.connect(resolver.resolve("127.0.0.1", address.substr(address.rfind(':') + 1)));
  http::request<http::empty_body> request{http::verb::get, target, 11};
  request.set(http::field::host, "127.0.0.1");
  if (!token.empty()) request.set(http::field::authorization, "Bearer " + token);
  http::write(stream, request);
  beast::flat_buffer buffer;
  http::response<http::string_body> response;
  http::read(stream, buffer, response);
  return {static_cast<int>(response.result_int()), response.body()};
}

class ReadOnlyServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = dir_.File("onset.db");
    std::string worker;
    ASSERT_NE(testing::OpenSmallStudyStore(path_, common::SystemClock(), &worker), nullptr);
  }

  absl::StatusOr<std::unique_ptr<ReadOnlyServer>> Start(const std::string& http = "") {
    ReadOnlyServerConfig config;
    config.db_path = path_;
    config.token = kToken;
    config.http_listen = http;
    return ReadOnlyServer::Start(config);
  }

  TempDir dir_;
  std::string path_;
};

TEST_F(ReadOnlyServerTest, ServesStudiesInProcessAndRefusesWrites) {
  absl::StatusOr<std::unique_ptr<ReadOnlyServer>> server = Start();
  ASSERT_TRUE(server.ok()) << server.status();
  EXPECT_EQ((*server)->http_address(), "");
  std::unique_ptr<v1::StudyService::Stub> stub = v1::StudyService::NewStub((*server)->channel());

  grpc::ClientContext list_context;
  v1::ListStudiesResponse studies;
  ASSERT_TRUE(stub->ListStudies(&list_context, {}, &studies).ok());
  ASSERT_EQ(studies.studies_size(), 1);
  EXPECT_EQ(studies.studies(0).name(), "small");
  EXPECT_EQ(studies.studies(0).cells_total(), 6);

  grpc::ClientContext get_context;
  v1::GetStudyRequest get;
  get.set_name("small");
  v1::GetStudyResponse study;
  ASSERT_TRUE(stub->GetStudy(&get_context, get, &study).ok());
  EXPECT_EQ(study.cells_size(), 6);

  grpc::ClientContext cancel_context;
  v1::CancelCellsRequest cancel;
  cancel.set_study("small");
  v1::CancelCellsResponse cancelled;
  const grpc::Status refused = stub->CancelCells(&cancel_context, cancel, &cancelled);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(refused.error_message(), HasSubstr("read-only"));

  grpc::ClientContext submit_context;
  v1::SubmitStudyRequest submit;
  submit.set_yaml(testing::kSmallStudy);
  v1::SubmitStudyResponse submitted;
  auto reader = stub->SubmitStudy(&submit_context, submit);
  EXPECT_FALSE(reader->Read(&submitted));
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::FAILED_PRECONDITION);

  // A dry run writes nothing, so a read-only coordinator answers it.
  grpc::ClientContext dry_context;
  submit.set_dry_run(true);
  auto dry = stub->SubmitStudy(&dry_context, submit);
  v1::SubmitStudyResponse previewed;
  while (dry->Read(&previewed)) {
  }
  EXPECT_TRUE(dry->Finish().ok());

  // Still all queued: nothing was written.
  grpc::ClientContext again_context;
  v1::GetStudyResponse again;
  ASSERT_TRUE(stub->GetStudy(&again_context, get, &again).ok());
  for (const v1::Cell& cell : again.cells()) EXPECT_EQ(cell.state(), v1::CELL_STATE_QUEUED);

  (*server)->Shutdown();
  grpc::ClientContext late_context;
  v1::ListStudiesResponse late;
  EXPECT_FALSE(stub->ListStudies(&late_context, {}, &late).ok());
}

TEST_F(ReadOnlyServerTest, TheDashboardNeedsTheToken) {
  absl::StatusOr<std::unique_ptr<ReadOnlyServer>> server = Start("127.0.0.1:0");
  ASSERT_TRUE(server.ok()) << server.status();
  const std::string address = (*server)->http_address();
  ASSERT_THAT(address, ::testing::StartsWith("127.0.0.1:"));

  const Reply studies = HttpGet(address, "/api/studies", kToken);
  EXPECT_EQ(studies.status, 200);
  const nlohmann::json json = nlohmann::json::parse(studies.body);
  EXPECT_THAT(json.dump(), HasSubstr("\"small\""));
  EXPECT_EQ(HttpGet(address, "/api/studies/small", kToken).status, 200);
  EXPECT_EQ(HttpGet(address, "/api/studies", "").status, 401);
  EXPECT_EQ(HttpGet(address, "/api/studies", std::string(kToken) + "x").status, 401);
  EXPECT_EQ(HttpGet(address, "/", "").status, 200);  // the page holds no data
}

TEST_F(ReadOnlyServerTest, RefusesWhatItCannotServeSafely) {
  EXPECT_EQ(Start("0.0.0.0:0").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(Start("0.0.0.0:0").status().message()), HasSubstr("ssh -L"));
  EXPECT_EQ(Start("no-port").status().code(), absl::StatusCode::kInvalidArgument);

  ReadOnlyServerConfig config;
  config.db_path = dir_.File("missing.db");
  config.token = kToken;
  EXPECT_EQ(ReadOnlyServer::Start(config).status().code(), absl::StatusCode::kNotFound);
  config.db_path = path_;
  config.token = "";
  EXPECT_EQ(ReadOnlyServer::Start(config).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace onset::coordinator
