// StudyClient against an in-process StudyService that answers ListStudies in pages: the client
// follows every page, and refuses a page that does not lead on instead of asking for ever.
#include "cli/client/study_client.h"

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>

namespace onset::cli {
namespace {

// Studies "s0".."s{n-1}", `per_page` a page; with `stuck`, every page names the first page's
// token again.
class PagedStudies final : public v1::StudyService::Service {
 public:
  PagedStudies(int n, int per_page, bool stuck = false)
      : n_(n), per_page_(per_page), stuck_(stuck) {}

  grpc::Status ListStudies(grpc::ServerContext*, const v1::ListStudiesRequest* request,
                           v1::ListStudiesResponse* response) override {
    ++calls_;
    const int from = request->page_token().empty() ? 0 : std::stoi(request->page_token());
    const int to = std::min(n_, from + per_page_);
    for (int i = from; i < to; ++i) response->add_studies()->set_name("s" + std::to_string(i));
    if (to < n_) response->set_next_page_token(std::to_string(stuck_ ? per_page_ : to));
    response->set_omitted(n_ - to);
    return grpc::Status::OK;
  }

  int calls() const { return calls_; }

 private:
  const int n_, per_page_;
  const bool stuck_;
  int calls_ = 0;
};

class StudyClientTest : public ::testing::Test {
 protected:
  void Serve(PagedStudies* service) {
    grpc::ServerBuilder builder;
    builder.RegisterService(service);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    client_ = std::make_unique<StudyClient>("in-process",
                                            server_->InProcessChannel(grpc::ChannelArguments()),
                                            std::chrono::seconds(10));
  }
  void TearDown() override {
    if (server_) server_->Shutdown();
  }

  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<StudyClient> client_;
};

TEST_F(StudyClientTest, ListFollowsEveryPageInOrder) {
  PagedStudies service(7, 3);
  Serve(&service);
  absl::StatusOr<v1::ListStudiesResponse> list = client_->List();
  ASSERT_TRUE(list.ok()) << list.status();
  ASSERT_EQ(list->studies_size(), 7);
  for (int i = 0; i < 7; ++i) EXPECT_EQ(list->studies(i).name(), "s" + std::to_string(i));
  EXPECT_EQ(list->next_page_token(), "");
  EXPECT_EQ(list->omitted(), 0);
  EXPECT_EQ(service.calls(), 3);
}

TEST_F(StudyClientTest, AListOfOnePageTakesOneCall) {
  PagedStudies service(2, 500);
  Serve(&service);
  absl::StatusOr<v1::ListStudiesResponse> list = client_->List();
  ASSERT_TRUE(list.ok()) << list.status();
  EXPECT_EQ(list->studies_size(), 2);
  EXPECT_EQ(service.calls(), 1);
}

TEST_F(StudyClientTest, APageThatDoesNotLeadOnIsAnError) {
  PagedStudies service(10, 2, /*stuck=*/true);
  Serve(&service);
  absl::StatusOr<v1::ListStudiesResponse> list = client_->List();
  EXPECT_EQ(list.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(std::string(list.status().message()).find("a page that does not lead on"),
            std::string::npos)
      << list.status();
  EXPECT_EQ(service.calls(), 2);
}

}  // namespace
}  // namespace onset::cli
