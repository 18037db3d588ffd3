// `onset compare A B`: two studies read as one on the real onsetd and onset. B repeats A's grid
// point (arch, seed 0) and adds seed 1; a fake worker reports each cell's NIAH curve. The same
// experiment counts once (A's cell), the groups pool both studies' seeds and name them, and
// where the repeat's result differs from the original's the text warns. Skips when a binary is
// missing.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/integration/harness.h"
#include "worker/coordinator_client.h"

namespace onset {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

constexpr char kGrid[] = R"(model: {layers: 2, d_model: 32, heads: 2, seq_len: 64}
train: {batch_tokens: 1K, micro_batch: 4}
eval: {every_tokens: 10K, heldout_seqs: 4, niah_lengths: [64], niah_samples: 2}
)";

class PooledCompareTest : public testing::OnsetdTest {
 protected:
  PooledCompareTest() : OnsetdTest("onset-pooled") {}

  std::string Write(const std::string& name, int seeds) {
    const std::string path = (dir_ / (name + ".yaml")).string();
    std::ofstream(path) << "name: " << name << "\n"
                        << kGrid << "grid: {arch: [full, \"swa:1\"], window: [16], tokens: [4M], "
                        << "seeds: " << seeds << "}\n";
    return path;
  }

  // Leases every queued cell and reports its niah/acc at 1M and 4M: swa crosses 0.5 early, full
  // late; the cell of study B at (full, seed 0) reports another final value than A's.
  void TrainEverything() {
    auto client = worker::NewGrpcCoordinatorClient(daemon_.address, {daemon_.token, ""});
    auto registered = client->Register("pooled-test", {"cpu:0"}, "test", "");
    ASSERT_TRUE(registered.ok()) << registered.status();
    for (int i = 0; i < 20; ++i) {
      auto lease = client->Lease(registered->worker_id, {"cpu:0"});
      ASSERT_TRUE(lease.ok()) << lease.status();
      if (!lease->job) break;
      const std::string config = lease->job->config_json;
      const bool swa = config.find("\"swa") != std::string::npos;
      const bool seed0 = config.find("\"seed\":0") != std::string::npos;
      double final_acc = swa ? 0.9 : 0.6;
      if (!swa && seed0 && lease->job->study == "b") final_acc = 0.7;  // the repeat differs
      const double first = swa ? (seed0 ? 0.6 : 0.55) : (seed0 ? 0.1 : 0.2);
      ASSERT_TRUE(client
                      ->ReportMetrics(registered->worker_id, lease->job->lease_id,
                                      {{"niah/acc", 1'000'000, first, 0},
                                       {"niah/acc", 4'000'000, final_acc, 0}})
                      .ok());
      worker::JobResult done;
      done.outcome = worker::JobOutcome::kSucceeded;
      ASSERT_TRUE(client->Finish(registered->worker_id, lease->job->lease_id, done).ok());
    }
  }
};

TEST_F(PooledCompareTest, TwoStudiesAsOneTheSameExperimentOnce) {
  std::string missing;
  if (!testing::HaveBinaries({"onsetd", "onset"}, &missing))
    GTEST_SKIP() << missing << " not built";
  daemon_ = testing::StartDaemon(launcher_, dir_);
  ASSERT_FALSE(daemon_.address.empty());
  ASSERT_EQ(Onset({"submit", Write("a", 1)}).code, 0);
  ASSERT_EQ(Onset({"submit", Write("b", 2)}).code, 0);
  TrainEverything();

  const testing::Ran json =
      Onset({"compare", "a", "b", "--metric", "niah/acc", "--threshold", "0.5", "--json"});
  ASSERT_EQ(json.code, 0) << json.err;
  EXPECT_THAT(json.err, HasSubstr("2 cell(s) of b are the same experiment as cells of a"));
  EXPECT_THAT(json.err, HasSubstr("a's are used"));
  EXPECT_THAT(json.err, HasSubstr("warning: the same experiment gave different final niah/acc "
                                  "in 1 case(s)"));
  const nlohmann::json table = nlohmann::json::parse(json.out);
  ASSERT_EQ(table["groups"].size(), 2u);
  for (const nlohmann::json& g : table["groups"]) {
    EXPECT_EQ(g["n"], 2) << g.dump();  // seed 0 from a, seed 1 from b: three cells, two counted
    EXPECT_EQ(g["studies"], nlohmann::json({{"a", 1}, {"b", 1}}));
  }
  const testing::Ran text =
      Onset({"compare", "a", "b", "--metric", "niah/acc", "--threshold", "0.5"});
  EXPECT_THAT(text.out, HasSubstr("STUDIES"));
  EXPECT_THAT(text.out, HasSubstr("a:1,b:1"));
  // One study alone: nothing pooled, no note.
  const testing::Ran alone = Onset({"compare", "b", "--metric", "niah/acc", "--threshold", "0.5"});
  EXPECT_EQ(alone.code, 0);
  EXPECT_THAT(alone.out, ::testing::Not(HasSubstr("STUDIES")));
  EXPECT_EQ(alone.err.find("same experiment"), std::string::npos);
  // An unknown study is named.
  const testing::Ran unknown =
      Onset({"compare", "a", "zz", "--metric", "niah/acc", "--threshold", "0.5"});
  EXPECT_NE(unknown.code, 0);
  EXPECT_THAT(unknown.err, HasSubstr("zz"));

  // export pools as compare does: a's 2 cells and b's 2 new ones, 2 points each, each row
  // naming its cell's study.
  const testing::Ran exported = Onset({"export", "a", "b", "--format", "jsonl"});
  ASSERT_EQ(exported.code, 0) << exported.err;
  EXPECT_THAT(exported.err, HasSubstr("2 cell(s) of b are the same experiment as cells of a"));
  std::map<std::string, int> rows_of;
  std::istringstream lines(exported.out);
  for (std::string line; std::getline(lines, line);) {
    ++rows_of[nlohmann::json::parse(line)["study"].get<std::string>()];
  }
  EXPECT_EQ(rows_of, (std::map<std::string, int>{{"a", 4}, {"b", 4}}));
  EXPECT_NE(Onset({"export", "a", "a"}).code, 0);  // a study twice is refused
}

}  // namespace
}  // namespace onset
