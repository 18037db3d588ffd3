// Credentials by role on the real onsetd and onset: a read token made with `onset token create`
// scrapes /metrics, reads the dashboard's API and `onset status`, and is refused Backup,
// RegisterWorker, LeaseJob and CancelCells with PERMISSION_DENIED naming what it lacks; a submit
// token cancels, and `onset audit` names it; a revoked token is refused at once. Secrets reach
// neither onsetd's log nor `onset token list`. Skips when onsetd or onset is not built.
#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "onset/v1/onset.grpc.pb.h"
#include "tests/integration/harness.h"

namespace onset {
namespace {

namespace fs = std::filesystem;
namespace beast = boost::beast;
namespace http = beast::http;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kStudy[] = R"(name: guarded
model: {layers: 2, d_model: 32, heads: 2, seq_len: 64}
train: {batch_tokens: 1K, micro_batch: 4}
eval: {every_tokens: 10K, heldout_seqs: 4, niah_lengths: [64], niah_samples: 2}
grid: {arch: [full, "swa:1"], window: [16], tokens: [20K], seeds: 1}
)";

// The status of GET http://`address``target` with "Authorization: Bearer SECRET"; 0 when no
// answer came within 10 s.
int HttpStatus(const std::string& address, const std::string& target, const std::string& secret) {
  try {
    boost::asio::io_context io;
    const size_t colon = address.rfind(':');
    boost::asio::ip::tcp::resolver resolver(io);
    beast::tcp_stream stream(io);
    stream.expires_after(std::chrono::seconds(10));
    stream.connect(resolver.resolve(address.substr(0, colon), address.substr(colon + 1)));
    http::request<http::empty_body> request(http::verb::get, target, 11);
    request.set(http::field::host, address);
    request.set(http::field::authorization, "Bearer " + secret);
    http::write(stream, request);
    beast::flat_buffer buffer;
    http::response<http::string_body> response;
    http::read(stream, buffer, response);
    return response.result_int();
  } catch (const std::exception&) {
    return 0;
  }
}

mode_t ModeOf(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(stat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

class CredentialsTest : public testing::OnsetdTest {
 protected:
  CredentialsTest() : OnsetdTest("onset-credentials") {}

  // `onset ARGS` against daemon_ with the token in `token_file`, within 60 s.
  testing::Ran OnsetAs(const std::string& token_file, std::vector<std::string> args) {
    args.insert(args.begin(), {"--coordinator", daemon_.address, "--token-file", token_file});
    testing::Child child = testing::Start(launcher_, "onset", std::move(args));
    return testing::Finish(child, std::chrono::seconds(60));
  }

  // A context whose call carries `secret` and has a 10 s deadline.
  static std::unique_ptr<grpc::ClientContext> As(const std::string& secret) {
    auto context = std::make_unique<grpc::ClientContext>();
    context->AddMetadata("authorization", "Bearer " + secret);
    context->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    return context;
  }
};

TEST_F(CredentialsTest, AReadTokenReadsIsRefusedTheRestAndStopsWorkingWhenRevoked) {
  std::string missing;
  if (!testing::HaveBinaries({"onsetd", "onset"}, &missing))
    GTEST_SKIP() << missing << " not built";
  daemon_ = testing::StartDaemon(
      launcher_, dir_,
      {"--metrics-listen", "127.0.0.1:0", "--metrics-address-file", (dir_ / "maddr").string(),
       "--http", "127.0.0.1:0", "--http-address-file", (dir_ / "haddr").string()});
  ASSERT_FALSE(daemon_.address.empty());
  const std::string metrics = testing::WaitForFile(dir_ / "maddr");
  const std::string dashboard = testing::WaitForFile(dir_ / "haddr");
  ASSERT_FALSE(metrics.empty());
  ASSERT_FALSE(dashboard.empty());

  // A read token into a file of its own (mode 0600); a submit token printed once on stdout.
  const std::string prom_file = (dir_ / "prom.token").string();
  testing::Ran created = Onset({"token", "create", "prom", "--role", "read", "--out", prom_file});
  ASSERT_EQ(created.code, 0) << created.err;
  EXPECT_EQ(ModeOf(prom_file), 0600u);
  absl::StatusOr<std::string> prom = common::ReadTokenFile(prom_file);
  ASSERT_TRUE(prom.ok()) << prom.status();
  EXPECT_EQ(prom->size(), 64u);
  EXPECT_THAT(created.out, Not(HasSubstr(*prom)));
  EXPECT_THAT(created.out, HasSubstr("token 'prom' (role read) created"));
  testing::Ran printed = Onset({"token", "create", "alice", "--role", "submit"});
  ASSERT_EQ(printed.code, 0) << printed.err;
  const std::string alice = printed.out.substr(0, printed.out.find('\n'));
  ASSERT_EQ(alice.size(), 64u) << printed.out;
  EXPECT_THAT(printed.err, HasSubstr("shown only now"));
  const std::string alice_file = (dir_ / "alice.token").string();
  std::ofstream(alice_file) << alice << "\n";
  ASSERT_EQ(chmod(alice_file.c_str(), 0600), 0);

  const std::string study = (dir_ / "guarded.yaml").string();
  std::ofstream(study) << kStudy;
  ASSERT_EQ(Onset({"submit", study}).code, 0);

  // What read is for: the metrics page, the dashboard's API, onset status.
  EXPECT_EQ(HttpStatus(metrics, "/metrics", *prom), 200);
  EXPECT_EQ(HttpStatus(dashboard, "/api/studies/guarded", *prom), 200);
  testing::Ran status = OnsetAs(prom_file, {"status"});
  EXPECT_EQ(status.code, 0) << status.err;
  EXPECT_THAT(status.out, HasSubstr("guarded"));
  status = OnsetAs(prom_file, {"status", "guarded"});
  EXPECT_EQ(status.code, 0) << status.err;

  // What it is not for, each refused with what it lacks.
  auto channel = grpc::CreateChannel(daemon_.address, grpc::InsecureChannelCredentials());
  auto studies = v1::StudyService::NewStub(channel);
  auto workers = v1::WorkerService::NewStub(channel);
  {
    auto context = As(*prom);
    auto reader = studies->Backup(context.get(), v1::BackupRequest());
    v1::BackupChunk chunk;
    EXPECT_FALSE(reader->Read(&chunk));
    const grpc::Status backup = reader->Finish();
    EXPECT_EQ(backup.error_code(), grpc::StatusCode::PERMISSION_DENIED);
    EXPECT_EQ(backup.error_message(), "token 'prom' has role read; Backup needs admin");
  }
  v1::RegisterWorkerRequest register_request;
  register_request.set_host("intruder");
  register_request.add_devices("cpu:0");
  v1::RegisterWorkerResponse registered;
  grpc::Status refused = workers->RegisterWorker(As(*prom).get(), register_request, &registered);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(refused.error_message(), "token 'prom' has role read; RegisterWorker needs worker");
  v1::LeaseJobRequest lease;
  lease.set_worker_id("w-anyone");
  lease.set_worker_secret("anything");
  lease.add_free_devices("cpu:0");
  v1::LeaseJobResponse leased;
  refused = workers->LeaseJob(As(*prom).get(), lease, &leased);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(refused.error_message(), "token 'prom' has role read; LeaseJob needs worker");
  v1::CancelCellsRequest cancel;
  cancel.set_study("guarded");
  v1::CancelCellsResponse cancelled;
  refused = studies->CancelCells(As(*prom).get(), cancel, &cancelled);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(refused.error_message(), "token 'prom' has role read; CancelCells needs submit");
  testing::Ran cli_cancel = OnsetAs(prom_file, {"cancel", "guarded"});
  EXPECT_EQ(cli_cancel.code, 1);
  EXPECT_THAT(cli_cancel.err, HasSubstr("token 'prom' has role read; CancelCells needs submit"));
  testing::Ran cli_backup = OnsetAs(prom_file, {"backup", "--out", (dir_ / "copy.db").string()});
  EXPECT_EQ(cli_backup.code, 1);
  EXPECT_THAT(cli_backup.err, HasSubstr("Backup needs admin"));
  EXPECT_FALSE(fs::exists(dir_ / "copy.db"));
  testing::Ran cli_tokens = OnsetAs(prom_file, {"token", "list"});
  EXPECT_EQ(cli_tokens.code, 1);
  EXPECT_THAT(cli_tokens.err, HasSubstr("ListTokens needs admin"));
  // Nothing of the refused calls happened: both cells still queued, no worker.
  testing::Ran got = OnsetAs(prom_file, {"status", "guarded", "--json"});
  ASSERT_EQ(got.code, 0) << got.err;
  EXPECT_EQ(nlohmann::json::parse(got.out)["study"]["cells_by_state"]["queued"], 2) << got.out;
  testing::Ran listed_workers = Onset({"workers", "--all", "--json"});
  ASSERT_EQ(listed_workers.code, 0) << listed_workers.err;
  EXPECT_THAT(listed_workers.out, Not(HasSubstr("intruder")));

  // A submit token cancels; the audit log names it.
  testing::Ran alice_cancel = OnsetAs(alice_file, {"cancel", "guarded"});
  ASSERT_EQ(alice_cancel.code, 0) << alice_cancel.err;
  testing::Ran audit = Onset({"audit"});
  ASSERT_EQ(audit.code, 0) << audit.err;
  bool cancel_by_alice = false;
  std::istringstream lines(audit.out);
  for (std::string line; std::getline(lines, line);) {
    if (line.find(" cancel ") != std::string::npos) {
      EXPECT_THAT(line, HasSubstr("alice "));
      EXPECT_THAT(line, HasSubstr(" submit "));
      EXPECT_THAT(line, HasSubstr("guarded"));
      EXPECT_THAT(line, HasSubstr("2 cells cancelled"));
      cancel_by_alice = true;
    }
  }
  EXPECT_TRUE(cancel_by_alice) << audit.out;
  testing::Ran audit_json = Onset({"audit", "--study", "guarded", "--json"});
  ASSERT_EQ(audit_json.code, 0) << audit_json.err;
  const nlohmann::json entries = nlohmann::json::parse(audit_json.out)["entries"];
  ASSERT_EQ(entries.size(), 2u) << audit_json.out;
  EXPECT_EQ(entries[0]["action"], "cancel");
  EXPECT_EQ(entries[0]["token_name"], "alice");
  EXPECT_EQ(entries[1]["action"], "submit");
  EXPECT_EQ(entries[1]["token_name"], "onsetd.token");

  // Revoked: refused from the next call on, by every door.
  testing::Ran revoked = Onset({"token", "revoke", "prom"});
  ASSERT_EQ(revoked.code, 0) << revoked.err;
  status = OnsetAs(prom_file, {"status"});
  EXPECT_EQ(status.code, 1);
  EXPECT_THAT(status.err, HasSubstr("missing or wrong token"));
  EXPECT_EQ(HttpStatus(metrics, "/metrics", *prom), 401);
  EXPECT_EQ(HttpStatus(dashboard, "/api/studies", *prom), 401);
  EXPECT_EQ(OnsetAs(alice_file, {"status"}).code, 0);

  // The list names them, never their secrets; nor does onsetd's log.
  testing::Ran list = Onset({"token", "list"});
  ASSERT_EQ(list.code, 0) << list.err;
  EXPECT_THAT(list.out, HasSubstr("onsetd.token  admin"));
  EXPECT_THAT(list.out, HasSubstr("(the token file)"));
  EXPECT_THAT(list.out, HasSubstr("alice"));
  EXPECT_THAT(list.out, HasSubstr("prom"));
  for (const std::string& secret : {*prom, alice, daemon_.token}) {
    EXPECT_THAT(list.out, Not(HasSubstr(secret)));
    EXPECT_THAT(daemon_.child.process->StderrTail(), Not(HasSubstr(secret)));
  }
}

}  // namespace
}  // namespace onset
