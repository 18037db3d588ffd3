// The real onsetd's standard gRPC health service (grpc.health.v1.Health): SERVING while it can
// write its database, NOT_SERVING while another program holds the database's write lock, and
// SERVING again once it lets go; asked without the token, as load balancers and Kubernetes
// probes ask. Skips when onsetd is not built.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "grpc/health/v1/health.grpc.pb.h"
#include "tests/integration/harness.h"

namespace onset {
namespace {

namespace fs = std::filesystem;
using grpc::health::v1::Health;
using grpc::health::v1::HealthCheckRequest;
using grpc::health::v1::HealthCheckResponse;

class HealthTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name : {"ONSET_COORDINATOR", "ONSET_TOKEN", "ONSET_TOKEN_FILE"}) {
      unsetenv(name);
    }
    dir_ = fs::temp_directory_path() / ("onset-health-" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(dir_);
  }

  // The status of `service` ("" for the server), or the call's error code as a negative number.
  static int Check(Health::Stub& stub, const std::string& service) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    HealthCheckRequest request;
    request.set_service(service);
    HealthCheckResponse response;
    const grpc::Status status = stub.Check(&context, request, &response);
    return status.ok() ? static_cast<int>(response.status())
                       : -static_cast<int>(status.error_code());
  }

  // Polls until `service` reports `want` (within 30 s: a probe may wait out the database's busy
  // timeout first); the last status seen.
  static int WaitFor(Health::Stub& stub, int want) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    int seen = Check(stub, "");
    while (seen != want && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      seen = Check(stub, "");
    }
    return seen;
  }

  fs::path dir_;
  worker::PosixProcessLauncher launcher_;
};

TEST_F(HealthTest, ServingWhileTheDatabaseCanBeWrittenNotWhileItsLockIsHeldElsewhere) {
  std::string missing;
  if (!testing::HaveBinaries({"onsetd"}, &missing)) GTEST_SKIP() << missing << " not built";
  testing::Daemon daemon = testing::StartDaemon(launcher_, dir_, {"--health-interval-ms", "100"});
  ASSERT_FALSE(daemon.address.empty());
  auto stub = Health::NewStub(
      grpc::CreateChannel(daemon.address, grpc::InsecureChannelCredentials()));  // no token
  EXPECT_EQ(Check(*stub, ""), HealthCheckResponse::SERVING);
  EXPECT_EQ(Check(*stub, "onset.v1.StudyService"), HealthCheckResponse::SERVING);
  EXPECT_EQ(Check(*stub, "onset.v1.WorkerService"), HealthCheckResponse::SERVING);
  EXPECT_EQ(Check(*stub, "no.such.Service"), -static_cast<int>(grpc::StatusCode::NOT_FOUND));

  // Another program takes the write lock (say, `sqlite3 onset.db` left in a transaction).
  sqlite3* holder = nullptr;
  ASSERT_EQ(sqlite3_open((dir_ / "onset.db").c_str(), &holder), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(holder, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr), SQLITE_OK)
      << sqlite3_errmsg(holder);
  EXPECT_EQ(WaitFor(*stub, HealthCheckResponse::NOT_SERVING), HealthCheckResponse::NOT_SERVING);
  EXPECT_EQ(Check(*stub, "onset.v1.WorkerService"), HealthCheckResponse::NOT_SERVING);
  sqlite3_exec(holder, "ROLLBACK", nullptr, nullptr, nullptr);
  sqlite3_close(holder);
  EXPECT_EQ(WaitFor(*stub, HealthCheckResponse::SERVING), HealthCheckResponse::SERVING);
  EXPECT_EQ(Check(*stub, "onset.v1.StudyService"), HealthCheckResponse::SERVING);

  const worker::ExitStatus stopped = daemon.child.process->Terminate(std::chrono::seconds(10));
  EXPECT_TRUE(stopped.Succeeded()) << stopped.ToString();
  const std::string log = daemon.child.process->StderrTail();
  EXPECT_NE(log.find("cannot be written"), std::string::npos) << log;
  EXPECT_NE(log.find("SERVING"), std::string::npos) << log;
}

}  // namespace
}  // namespace onset
