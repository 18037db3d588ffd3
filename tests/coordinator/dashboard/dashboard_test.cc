// The dashboard's HTTP API, as logic and over a real socket.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <nlohmann/json.hpp>
#include <set>

#include "analysis/study_compare.h"
#include "common/fake_clock.h"
#include "coordinator/dashboard/dashboard_api.h"
#include "coordinator/dashboard/dashboard_server.h"
#include "coordinator/store/sqlite_store.h"
#include "coordinator/study/study_file.h"
#include "tests/coordinator/test_util.h"

namespace onset::coordinator {
namespace {

using ::testing::HasSubstr;
using testutil::TempDir;

constexpr char kToken[] = "dashboard-token-0123456789abcdef0123456789";

class DashboardTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string worker;
    store_ = testing::OpenSmallStudyStore(dir_.File("onset.db"), clock_, &worker);
    ASSERT_NE(store_, nullptr);
    absl::StatusOr<std::optional<ClaimedJob>> job = store_->ClaimNextCell(worker, {"cpu:0"});
    ASSERT_TRUE(job.ok() && job->has_value());
    cell_ = (*job)->cell_id;
    lease_ = (*job)->lease_id;
    ASSERT_TRUE(store_
                    ->AddMetrics((*job)->lease_id, {{"train/loss", 1000, 4.0, 1796558400000},
                                                    {"train/loss", 2000, 3.0, 1796558401000},
                                                    {"train/loss", 4000, 2.0}})
                    .ok());
    api_ = std::make_unique<DashboardApi>(store_.get(), store_.get(), kToken);
  }

  HttpResponse Get(const std::string& target, const std::string& token = kToken) {
    return api_->Handle({"GET", target, token.empty() ? "" : "Bearer " + token});
  }

  TempDir dir_;
  common::FakeClock clock_;
  std::unique_ptr<SqliteStore> store_;
  std::unique_ptr<DashboardApi> api_;
  std::string cell_;
  std::string lease_;
};

TEST_F(DashboardTest, RetrievalHeadsOfACell) {
  ASSERT_TRUE(store_
                  ->AddMetrics(lease_, {{"rh/score/l1h0", 1000, 0.05},
                                        {"rh/score/l1h0", 2000, 0.4},
                                        {"rh/score/l1h1", 2000, 0.0}})
                  .ok());
  HttpResponse r = Get("/api/studies/small/heads/" + cell_);
  ASSERT_EQ(r.status, 200) << r.body;
  const nlohmann::json got = nlohmann::json::parse(r.body);
  EXPECT_EQ(got["tokens"], 2000);
  ASSERT_EQ(got["heads"].size(), 2u);
  EXPECT_EQ(got["heads"][0]["layer"], 1);
  EXPECT_DOUBLE_EQ(got["heads"][0]["score"].get<double>(), 0.4);
  EXPECT_EQ(got["heads"][0]["first_retrieval_tokens"], 2000);
  EXPECT_EQ(nlohmann::json::parse(
                Get("/api/studies/small/heads/" + cell_ + "?tokens=1500").body)["tokens"],
            1000);
  EXPECT_EQ(Get("/api/studies/small/heads/0000000000000000").status, 404);
}

// The page opens on the first NIAH accuracy a study has, before the loss; it never spells a
// metric name itself.
TEST_F(DashboardTest, TheMetricShownFirstIsTheNiahAccuracy) {
  ASSERT_TRUE(store_
                  ->AddMetrics(lease_, {{"eval/heldout_loss", 1000, 3.0},
                                        {"niah/acc@128", 1000, 0.25},
                                        {"niah/acc", 1000, 0.5}})
                  .ok());
  const nlohmann::json metrics = nlohmann::json::parse(Get("/api/studies/small/metrics").body);
  EXPECT_EQ(metrics["first"], "niah/acc");
  EXPECT_THAT(DashboardPage(), ::testing::Not(::testing::HasSubstr("niah/")));
}

TEST_F(DashboardTest, ThePageIsStaticAndTheApiNeedsTheToken) {
  HttpResponse page = Get("/", "");
  EXPECT_EQ(page.status, 200);
  EXPECT_THAT(page.content_type, HasSubstr("text/html"));
  EXPECT_THAT(page.body, HasSubstr("<title>onset</title>"));
  // Nothing is loaded from elsewhere (the SVG namespace URI is a name, not a fetch).
  for (const char* fetch : {"src=\"http", "href=\"http", "url(http", "@import", "src=\"//"}) {
    EXPECT_THAT(page.body, ::testing::Not(HasSubstr(fetch)));
  }
  EXPECT_EQ(Get("/api/studies", "").status, 401);
  EXPECT_EQ(Get("/api/studies", std::string(kToken) + "x").status, 401);
  EXPECT_EQ(api_->Handle({"GET", "/api/studies", std::string("Basic ") + kToken}).status, 401);
  EXPECT_EQ(api_->Handle({"POST", "/api/studies", std::string("Bearer ") + kToken}).status, 405);
  EXPECT_EQ(Get("/elsewhere").status, 404);
}

// The dashboard reads with any token of role read or better; a worker's token is refused with
// what it lacks; the page itself holds no data and needs none.
TEST_F(DashboardTest, AnyTokenOfRoleReadOrBetterReads) {
  auto tokens = common::TokenRegistry::WithFileToken(kToken);
  tokens->AddSecret("viewer-secret", {"viewer", common::Role::kRead});
  tokens->AddSecret("worker-secret", {"gpu-node", common::Role::kWorker});
  DashboardApi api(store_.get(), store_.get(), tokens);
  EXPECT_EQ(api.Handle({"GET", "/api/studies/small", "Bearer viewer-secret"}).status, 200);
  EXPECT_EQ(api.Handle({"GET", "/api/studies", std::string("Bearer ") + kToken}).status, 200);
  const HttpResponse worker = api.Handle({"GET", "/api/studies", "Bearer worker-secret"});
  EXPECT_EQ(worker.status, 403);
  EXPECT_THAT(worker.body,
              HasSubstr("token 'gpu-node' has role worker; the dashboard's API needs read"));
  EXPECT_EQ(api.Handle({"GET", "/", ""}).status, 200);
  tokens->Remove("viewer");
  EXPECT_EQ(api.Handle({"GET", "/api/studies", "Bearer viewer-secret"}).status, 401);
}

// A study's own words reach the page: its description and tags, in the list and on its page.
TEST_F(DashboardTest, AStudysDescriptionAndTags) {
  absl::StatusOr<StudySpec> spec =
      ParseStudyFile("w.yaml", std::string("description: why this study\ntags: [gpu, ablation]\n") +
                                   "name: words\n" +
                                   std::string(testing::kSmallStudy)
                                       .substr(std::string(testing::kSmallStudy).find('\n') + 1));
  ASSERT_TRUE(spec.ok()) << spec.status();
  NewStudy study{spec->name, spec->description, spec->source_name, spec->source_yaml, spec->cells};
  study.tags = spec->tags;
  ASSERT_TRUE(store_->AddStudy(study).ok());
  const nlohmann::json studies = nlohmann::json::parse(Get("/api/studies").body);
  ASSERT_EQ(studies["studies"].size(), 2u);
  const nlohmann::json& words = studies["studies"][1];
  EXPECT_EQ(words["name"], "words");
  EXPECT_EQ(words["description"], "why this study");
  EXPECT_EQ(words["tags"], nlohmann::json({"ablation", "gpu"}));
  EXPECT_TRUE(studies["studies"][0].value("tags", nlohmann::json::array()).empty());
  const nlohmann::json page = nlohmann::json::parse(Get("/api/studies/words").body);
  EXPECT_EQ(page["study"]["description"], "why this study");
  EXPECT_EQ(page["study"]["tags"], nlohmann::json({"ablation", "gpu"}));
}

// The list of studies comes a page at a time, as ListStudies pages it: the page and the Python
// package follow next_page_token.
TEST_F(DashboardTest, StudiesAreListedInPages) {
  for (const char* name : {"two", "three"}) {
    std::string text = testing::kSmallStudy;
    text.replace(text.find("name: small"), 11, std::string("name: ") + name);
    absl::StatusOr<StudySpec> spec = ParseStudyFile("s.yaml", text);
    ASSERT_TRUE(spec.ok()) << spec.status();
    ASSERT_TRUE(store_->AddStudy({spec->name, "", "s.yaml", spec->source_yaml, spec->cells}).ok());
  }
  const nlohmann::json first = nlohmann::json::parse(Get("/api/studies?page_size=2").body);
  ASSERT_EQ(first["studies"].size(), 2u);
  EXPECT_EQ(first["studies"][0]["name"], "small");
  EXPECT_EQ(first["studies"][1]["name"], "two");
  EXPECT_EQ(first["omitted"], 1);
  const nlohmann::json second = nlohmann::json::parse(
      Get("/api/studies?page_size=2&page_token=" + first["next_page_token"].get<std::string>())
          .body);
  ASSERT_EQ(second["studies"].size(), 1u);
  EXPECT_EQ(second["studies"][0]["name"], "three");
  EXPECT_EQ(second["next_page_token"], "");
  EXPECT_EQ(nlohmann::json::parse(Get("/api/studies").body)["studies"].size(), 3u);
  EXPECT_EQ(Get("/api/studies?page_size=1001").status, 400);
  EXPECT_EQ(Get("/api/studies?page_size=many").status, 400);
  EXPECT_EQ(Get("/api/studies?page_token=x").status, 400);
}

TEST_F(DashboardTest, StudiesCellsAndCurves) {
  const nlohmann::json studies = nlohmann::json::parse(Get("/api/studies").body);
  ASSERT_EQ(studies["studies"].size(), 1u);
  EXPECT_EQ(studies["studies"][0]["name"], "small");
  const nlohmann::json study = nlohmann::json::parse(Get("/api/studies/small").body);
  EXPECT_EQ(study["cells"].size(), 6u);
  EXPECT_EQ(study.value("next_page_token", ""), "");
  EXPECT_EQ(Get("/api/studies/nope").status, 404);

  // No reply grows with the study: its cells come a page at a time, the token leading on.
  const nlohmann::json first = nlohmann::json::parse(Get("/api/studies/small?page_size=4").body);
  ASSERT_EQ(first["cells"].size(), 4u);
  ASSERT_NE(first.value("next_page_token", ""), "");
  const nlohmann::json rest =
      nlohmann::json::parse(Get("/api/studies/small?page_size=4&page_token=" +
                                first["next_page_token"].get<std::string>())
                                .body);
  ASSERT_EQ(rest["cells"].size(), 2u);
  EXPECT_EQ(rest.value("next_page_token", ""), "");
  std::set<std::string> ids;
  for (const auto* page : {&first, &rest}) {
    for (const auto& cell : (*page)["cells"]) ids.insert(cell["id"].get<std::string>());
  }
  EXPECT_EQ(ids.size(), 6u);
  EXPECT_EQ(Get("/api/studies/small?page_size=20000").status, 400);
  EXPECT_EQ(Get("/api/studies/small?page_size=many").status, 400);
  EXPECT_EQ(Get("/api/studies/small?page_token=x").status, 400);

  const nlohmann::json metrics = nlohmann::json::parse(Get("/api/studies/small/metrics").body);
  ASSERT_EQ(metrics["metrics"].size(), 1u);
  EXPECT_EQ(metrics["metrics"][0]["name"], "train/loss");
  EXPECT_EQ(metrics["first"], "train/loss");  // no NIAH accuracy: the loss is shown first

  const nlohmann::json curves =
      nlohmann::json::parse(Get("/api/studies/small/curves?metric=train%2Floss").body);
  ASSERT_EQ(curves["curves"].size(), 1u);
  EXPECT_EQ(curves["curves"][0]["cell_id"], cell_);
  EXPECT_EQ(curves["curves"][0]["tokens"], nlohmann::json({1000, 2000, 4000}));
  EXPECT_EQ(curves["curves"][0]["values"], nlohmann::json({4.0, 3.0, 2.0}));
  // When each was measured; the last one's time is not known.
  EXPECT_EQ(curves["curves"][0]["at_unix_ms"],
            nlohmann::json({1796558400000, 1796558401000, nullptr}));
  EXPECT_EQ(Get("/api/studies/small/curves").status, 400);  // which metric?
}

TEST_F(DashboardTest, CompareGivesTheCliNumbers) {
  HttpResponse r = Get("/api/studies/small/compare?metric=train/loss&threshold=3.5&by=arch");
  ASSERT_EQ(r.status, 200) << r.body;
  const nlohmann::json got = nlohmann::json::parse(r.body);
  EXPECT_EQ(got["direction"], "down");
  ASSERT_EQ(got["groups"].size(), 1u);
  // 4.0 at 1000 and 3.0 at 2000: 3.5 is half way in log tokens, sqrt(2) * 1000.
  EXPECT_NEAR(got["groups"][0]["median"]["tokens"].get<double>(), 1000 * std::sqrt(2.0), 1e-6);
  EXPECT_EQ(Get("/api/studies/small/compare?metric=train/loss").status, 400);
  EXPECT_EQ(Get("/api/studies/small/compare?metric=train/loss&threshold=x").status, 400);
  EXPECT_THAT(Get("/api/studies/small/compare?metric=train/loss&threshold=1&by=nope").body,
              HasSubstr("--by: nope is not an axis"));
}

// The dashboard reads its query with the CLI's parser (analysis/compare_params.h): the same
// refusals in the same words, a baseline without a value among them.
TEST_F(DashboardTest, CompareRefusesWhatTheCliRefuses) {
  HttpResponse r = Get("/api/studies/small/compare?metric=train/loss&threshold=1&baseline=arch=");
  EXPECT_EQ(r.status, 400);
  EXPECT_THAT(r.body, HasSubstr("baseline: must be AXIS=VALUE, e.g. arch=full, got 'arch='"));
  r = Get("/api/studies/small/compare?metric=train/loss&threshold=1&direction=sideways");
  EXPECT_EQ(r.status, 400);
  EXPECT_THAT(r.body, HasSubstr("direction: must be auto, up or down, got 'sideways'"));
  r = Get("/api/studies/small/compare?metric=train/loss&threshold=inf");
  EXPECT_EQ(r.status, 400);
  EXPECT_THAT(r.body, HasSubstr("threshold: must be a finite number, got 'inf'"));
}

// Studies side by side and a nuisance axis chosen by a stated rule, as `onset compare A B
// --best-over train.lr` reads them: b's seed-0 cells are a's (configs equal but for the study)
// and count once; each group's learning rate is the one with the lower held-out loss on the
// selection seed, and the groups compare the other seed's cells.
TEST_F(DashboardTest, ComparesStudiesTogetherWithTheBestOfAnAxis) {
  const auto spec = [](const std::string& study, const std::string& arch, const std::string& lr,
                       int seed) {
    CellSpec c;
    c.axes = {{"arch", arch}, {"tokens", "4000"}, {"seed", std::to_string(seed)}, {"train.lr", lr}};
    c.config_json =
        nlohmann::json({{"study", study}, {"arch", arch}, {"lr", lr}, {"seed", seed}}).dump();
    c.id = study + "-" + arch + "-" + lr + "-" + std::to_string(seed);
    c.tokens_budget = 4000;
    return c;
  };
  std::vector<CellSpec> a, b;
  for (const std::string arch : {"full", "gdn"}) {
    for (const std::string lr : {"1e-3", "1e-2"}) {
      a.push_back(spec("a", arch, lr, 0));
      b.push_back(spec("b", arch, lr, 0));  // a's experiment again
      b.push_back(spec("b", arch, lr, 1));
    }
  }
  ASSERT_TRUE(store_->AddStudy({"a", "", "a.yaml", "name: a", a}).ok());
  ASSERT_TRUE(store_->AddStudy({"b", "", "b.yaml", "name: b", b}).ok());
  absl::StatusOr<std::string> worker = testing::WorkerId(store_->RegisterWorker({"h", 1, "v"}));
  ASSERT_TRUE(worker.ok());
  // The learning rate that wins: 1e-2 for full, 1e-3 for gdn (lower held-out loss); gdn's
  // accuracy crosses 0.5 at 1000 tokens, full's at 2000, whichever rate.
  int reported = 0;
  while (true) {
    absl::StatusOr<std::optional<ClaimedJob>> job = store_->ClaimNextCell(*worker, {"cpu:0"});
    ASSERT_TRUE(job.ok());
    if (!job->has_value()) break;
    const std::string& id = (*job)->cell_id;
    if (id.find('-') == std::string::npos) continue;  // the small study's
    ++reported;
    const bool gdn = id.find("gdn") != std::string::npos;
    const bool high_lr = id.find("1e-2") != std::string::npos;
    const double heldout = (gdn != high_lr) ? 2.0 : 3.0;
    const double at_2000 = id[0] == 'b' && id.back() == '0' ? 0.75 : 0.8;  // b's rerun differs
    ASSERT_TRUE(store_
                    ->AddMetrics((*job)->lease_id, {{"acc", 1000, gdn ? 0.6 : 0.1},
                                                    {"acc", 2000, gdn ? 0.9 : at_2000},
                                                    {"eval/heldout_loss", 2000, heldout}})
                    .ok());
  }
  ASSERT_EQ(reported, 12);

  HttpResponse r =
      Get("/api/studies/a/compare?metric=acc&threshold=0.5&by=arch&with=b&best_over=train.lr&"
          "select_on_seeds=0");
  ASSERT_EQ(r.status, 200) << r.body;
  const nlohmann::json got = nlohmann::json::parse(r.body);
  ASSERT_EQ(got["groups"].size(), 2u) << r.body;
  for (const nlohmann::json& g : got["groups"]) {
    EXPECT_EQ(g["n"], 1) << g.dump();  // seed 1 alone: seed 0 chose
    EXPECT_EQ(g["studies"], nlohmann::json({{"b", 1}})) << g.dump();
  }
  ASSERT_EQ(got["best_over"]["choices"].size(), 2u);
  std::map<std::string, std::string> chosen;
  for (const nlohmann::json& c : got["best_over"]["choices"]) {
    chosen[c["axes"]["arch"].get<std::string>()] = c["chosen"].get<std::string>();
  }
  EXPECT_EQ(chosen, (std::map<std::string, std::string>{{"full", "1e-2"}, {"gdn", "1e-3"}}));
  EXPECT_EQ(got["best_over"]["metric"], "eval/heldout_loss");
  ASSERT_TRUE(got.contains("notes")) << r.body;
  const std::string notes = got["notes"].dump();
  EXPECT_THAT(notes, HasSubstr("4 cell(s) of b are the same experiment as cells of a"));
  EXPECT_THAT(notes, HasSubstr("warning: the same experiment gave different final acc"));

  // Without the selection seeds the duplicates count once: 2 seeds per group and rate.
  r = Get("/api/studies/a/compare?metric=acc&threshold=0.5&by=arch,train.lr&with=b");
  ASSERT_EQ(r.status, 200) << r.body;
  for (const nlohmann::json& g : nlohmann::json::parse(r.body)["groups"]) {
    EXPECT_EQ(g["n"], 2) << g.dump();
    EXPECT_EQ(g["studies"], nlohmann::json({{"a", 1}, {"b", 1}})) << g.dump();
  }
  // The curves of both, the same experiment once: 4 of a and 4 new of b.
  const nlohmann::json curves =
      nlohmann::json::parse(Get("/api/studies/a/curves?metric=acc&with=b").body);
  EXPECT_EQ(curves["curves"].size(), 8u);
  EXPECT_EQ(Get("/api/studies/a/compare?metric=acc&threshold=0.5&with=nope").status, 404);
  EXPECT_THAT(Get("/api/studies/a/compare?metric=acc&threshold=0.5&with=a").body,
              HasSubstr("each at most once"));
}

// A WSD trunk is listed with the study's cells (status), but has no curves and is no grid point
// to compare.
TEST_F(DashboardTest, TrunksAreListedButNeitherCurvesNorComparedCells) {
  CellSpec trunk, branch;
  trunk.id = "7000000000000001";
  trunk.axes = {{"arch", "full"}, {"tokens", "2000"}, {"seed", "0"}};
  trunk.config_json = R"({"trunk":{"until":2000}})";
  trunk.tokens_budget = 2000;
  trunk.role = CellRole::kTrunk;
  branch.id = "b000000000000001";
  branch.axes = {{"arch", "full"}, {"tokens", "2500"}, {"seed", "0"}};
  branch.config_json = "{}";
  branch.tokens_budget = 2500;
  branch.role = CellRole::kBranch;
  branch.trunk_id = trunk.id;
  branch.branch_tokens = 2000;
  ASSERT_TRUE(store_->AddStudy({"wsd", "", "wsd.yaml", "name: wsd", {trunk, branch}}).ok());
  absl::StatusOr<std::string> worker = testing::WorkerId(store_->RegisterWorker({"h", 1, "v"}));
  ASSERT_TRUE(worker.ok());
  while (true) {
    absl::StatusOr<std::optional<ClaimedJob>> job = store_->ClaimNextCell(*worker, {"cpu:0"});
    ASSERT_TRUE(job.ok() && job->has_value());
    if ((*job)->cell_id != trunk.id) continue;
    ASSERT_TRUE(store_->AddMetrics((*job)->lease_id, {{"train/loss", 1000, 4.0}}).ok());
    break;
  }

  const nlohmann::json study = nlohmann::json::parse(Get("/api/studies/wsd").body);
  ASSERT_EQ(study["cells"].size(), 2u);
  EXPECT_EQ(study["cells"][0]["role"], "trunk");
  EXPECT_EQ(study["cells"][1]["role"], "branch");
  EXPECT_EQ(study["cells"][1]["trunk_id"], trunk.id);
  EXPECT_EQ(study["cells"][1]["waiting_for_trunk"], true);
  EXPECT_EQ(study["study"]["cells_total"], 1);
  EXPECT_EQ(nlohmann::json::parse(Get("/api/studies/wsd/metrics").body)["metrics"].size(), 0u);
  EXPECT_EQ(nlohmann::json::parse(Get("/api/studies/wsd/metrics").body)["first"], "");
  EXPECT_EQ(
      nlohmann::json::parse(Get("/api/studies/wsd/curves?metric=train/loss").body)["curves"].size(),
      0u);
  HttpResponse r = Get("/api/studies/wsd/compare?metric=train/loss&threshold=3");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(nlohmann::json::parse(r.body)["cells_without_points"], 1);  // the branch alone
}

// full x {rope, nope-full, nope} and swa x {rope, nope-full}: full with nope-full is stored as
// the full nope cell, and the swa nope-full group still finds it as its arch=full baseline.
TEST(DashboardCompareTest, PairsGroupsThroughTheSchemesTheGridMerged) {
  TempDir dir;
  common::FakeClock clock;
  absl::StatusOr<std::unique_ptr<SqliteStore>> store = SqliteStore::Open(dir.File("db"), clock);
  ASSERT_TRUE(store.ok()) << store.status();
  absl::StatusOr<StudySpec> spec = ParseStudyFile("pos.yaml", R"yaml(name: pos
model: {layers: 4, d_model: 32, heads: 2, seq_len: 64}
train: {tokens: 64K, batch_tokens: 512}
grid:
  arch: [full, swa]
  window: [16]
  pos: [rope, nope-full, nope]
exclude:
  - {arch: swa, pos: nope}
)yaml");
  ASSERT_TRUE(spec.ok()) << spec.status();
  ASSERT_EQ(spec->cells.size(), 4u);  // full rope, full nope (= nope-full), swa rope, nope-full
  ASSERT_TRUE(
      (*store)->AddStudy({spec->name, "", "pos.yaml", spec->source_yaml, spec->cells}).ok());
  absl::StatusOr<std::string> worker = testing::WorkerId((*store)->RegisterWorker({"h", 1, "v"}));
  ASSERT_TRUE(worker.ok());
  for (int i = 0; i < 4; ++i) {
    absl::StatusOr<std::optional<ClaimedJob>> job = (*store)->ClaimNextCell(*worker, {"cpu:0"});
    ASSERT_TRUE(job.ok() && job->has_value());
    const CellInfo cell = testing::FindCell(**store, "pos", (*job)->cell_id);
    // full reaches 0.5 at 2000 tokens, swa at sqrt(2) * 1000.
    const int64_t hit = cell.axes.at("arch") == "full" ? 4000 : 2000;
    ASSERT_TRUE((*store)->AddMetrics((*job)->lease_id, {{"m", 1000, 0.2}, {"m", hit, 0.8}}).ok());
  }
  DashboardApi api(store->get(), store->get(), kToken);
  HttpResponse r = api.Handle({"GET",
                               "/api/studies/pos/compare?metric=m&threshold=0.5&"
                               "baseline=arch%3Dfull&by=arch,window,pos",
                               std::string("Bearer ") + kToken});
  ASSERT_EQ(r.status, 200) << r.body;
  const nlohmann::json got = nlohmann::json::parse(r.body);
  ASSERT_EQ(got["groups"].size(), 4u);
  bool seen = false;
  for (const nlohmann::json& g : got["groups"]) {
    if (g["axes"]["arch"] != "swa" || g["axes"]["pos"] != "nope-full") continue;
    seen = true;
    ASSERT_TRUE(g.contains("speed_up")) << g.dump();
    EXPECT_EQ(g["speed_up"]["kind"], "exact");
    EXPECT_NEAR(g["speed_up"]["value"].get<double>(), std::sqrt(2.0), 1e-9);
    EXPECT_EQ(g["speed_up"]["baseline_axes"]["pos"], "nope");
    // Every cell is sized, so the group is too.
    EXPECT_GT(g["non_embedding_params"]["min"].get<double>(), 0);
    EXPECT_GT(g["train_flops_per_token"]["max"].get<double>(), 0);
  }
  EXPECT_TRUE(seen);
  // The study's cells carry what they stand for and their size.
  const nlohmann::json study = nlohmann::json::parse(
      api.Handle({"GET", "/api/studies/pos", std::string("Bearer ") + kToken}).body);
  int aliased = 0;
  for (const nlohmann::json& c : study["cells"]) {
    EXPECT_NE(c["non_embedding_params"], "0");  // int64 as a JSON string
    if (c["axis_aliases"].contains("pos")) {
      ++aliased;
      EXPECT_EQ(c["axis_aliases"]["pos"]["values"], nlohmann::json({"nope-full"}));
    }
  }
  EXPECT_EQ(aliased, 1);
}

TEST_F(DashboardTest, ServesOverHttpAndStopsWithAConnectionOpen) {
  namespace beast = boost::beast;
  namespace http = beast::http;
  using tcp = boost::asio::ip::tcp;
  absl::StatusOr<std::unique_ptr<DashboardServer>> server =
      DashboardServer::Start("127.0.0.1:0", api_.get());
  ASSERT_TRUE(server.ok()) << server.status();
  const std::string address = (*server)->address();
  const std::string port = address.substr(address.rfind(':') + 1);

  boost::asio::io_context io;
  tcp::resolver resolver(io);
  beast::tcp_stream stream(io);
  stream.connect(resolver.resolve("127.0.0.1", port));
  http::request<http::empty_body> req{http::verb::get, "/api/studies/small", 11};
  req.set(http::field::host, "127.0.0.1");
  req.set(http::field::authorization, std::string("Bearer ") + kToken);
  http::write(stream, req);
  beast::flat_buffer buffer;
  http::response<http::string_body> res;
  http::read(stream, buffer, res);
  EXPECT_EQ(res.result_int(), 200);
  EXPECT_THAT(res.body(), HasSubstr("\"cells\""));
  // The connection stays open (keep-alive); Stop must not wait for it.
  const auto start = std::chrono::steady_clock::now();
  (*server)->Stop();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_FALSE(DashboardServer::Start("not-an-address", api_.get()).ok());
}

}  // namespace
}  // namespace onset::coordinator
