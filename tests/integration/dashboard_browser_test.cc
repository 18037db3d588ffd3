// The dashboard in a real browser: headless Chromium (Debian's package) loads the page from an
// onsetd holding a finished study, and the DOM it builds must show the study's cells, draw a
// curve per cell, and give the same tokens-to-threshold as `onset compare --json`; opened on the
// study alone, it shows the headline metric's curves (each seed and each group's median) and the
// fraction of seeds past the threshold, without a click. Skips when chromium or a binary is
// missing.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "cli/client/study_client.h"
#include "common/auth_token.h"
#include "tests/integration/harness.h"

namespace onset {
namespace {

namespace fs = std::filesystem;
using testing::Child;
using testing::HaveBinaries;
using testing::Start;
using testing::WaitForFile;

constexpr char kStudy[] = R"(name: browse
model: {layers: 2, d_model: 32, heads: 2, seq_len: 64}
train: {batch_tokens: 1K, micro_batch: 4, log_every_steps: 2}
eval: {every_tokens: 10K, heldout_seqs: 4, niah_lengths: [64], niah_samples: 2}
grid:
  arch: [full, "swa:1"]
  window: [16]
  tokens: [20K]
  seeds: 2
)";

std::string Chromium() {
  for (const char* path : {"/usr/bin/chromium", "/usr/bin/chromium-browser"}) {
    if (fs::exists(path)) return path;
  }
  return "";
}

size_t CountMatches(const std::string& text, const std::string& pattern) {
  const std::regex re(pattern);
  return std::distance(std::sregex_iterator(text.begin(), text.end(), re), std::sregex_iterator());
}

TEST(DashboardBrowserTest, ThePageShowsTheCellsCurvesAndTheClisNumbers) {
  std::string missing;
  if (!HaveBinaries({"onsetd", "onset-worker", "onset-train", "onset"}, &missing)) {
    GTEST_SKIP() << missing << " not built";
  }
  const std::string chromium = Chromium();
  if (chromium.empty()) GTEST_SKIP() << "chromium is not installed (apt-get install chromium)";
  const fs::path dir = fs::temp_directory_path() / ("onset-browser-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "browse.yaml") << kStudy;
  worker::PosixProcessLauncher launcher;
  testing::Daemon started = testing::StartDaemon(
      launcher, dir, {"--http", "127.0.0.1:0", "--http-address-file", (dir / "http").string()});
  ASSERT_FALSE(started.address.empty() || started.token.empty());
  Child& daemon = started.child;
  const std::string& address = started.address;
  const std::string& token_file = started.token_file;
  const std::string& token = started.token;
  const std::string http = WaitForFile(dir / "http");
  ASSERT_FALSE(http.empty()) << daemon.process->StderrTail();
  Child worker = Start(launcher, "onset-worker",
                       {"--coordinator", address, "--work-dir", (dir / "work").string(), "--slots",
                        "2", "--token-file", token_file});
  Child submit = Start(launcher, "onset",
                       {"--coordinator", address, "--token-file", token_file, "submit",
                        (dir / "browse.yaml").string()});
  ASSERT_TRUE(submit.process->Wait().Succeeded()) << submit.process->StderrTail();
  cli::StudyClient client(address, common::ClientSecurity{token, ""});
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(4);
  while (std::chrono::steady_clock::now() < deadline) {
    auto s = client.Get("browse");
    ASSERT_TRUE(s.ok()) << s.status();
    if (s->study().cells_by_state().count("succeeded") &&
        s->study().cells_by_state().at("succeeded") == 4) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }

  // A threshold every cell's loss passes between its first and last points, so that the
  // crossings are interpolated rather than at an end.
  auto curves = client.Metrics("browse", {"train/loss"});
  ASSERT_TRUE(curves.ok()) << curves.status();
  double min_first = 1e9, max_last = -1e9;
  for (const auto& [cell, by_metric] : *curves) {
    const auto& points = by_metric.at("train/loss");
    min_first = std::min(min_first, points.front().second);
    max_last = std::max(max_last, points.back().second);
  }
  ASSERT_LT(max_last, min_first) << "the losses did not fall";
  char threshold[32];
  std::snprintf(threshold, sizeof threshold, "%.4f", max_last + 0.3 * (min_first - max_last));
  Child compare =
      Start(launcher, "onset",
            {"--coordinator", address, "--token-file", token_file, "compare", "browse", "--metric",
             "train/loss", "--threshold", threshold, "--by", "arch", "--json"});
  ASSERT_TRUE(compare.process->Wait().Succeeded()) << compare.process->StderrTail();
  const nlohmann::json cli = nlohmann::json::parse(compare.Out());
  ASSERT_EQ(cli["groups"].size(), 2u);

  // The page as headless Chromium builds it from `hash` (after the #).
  auto page = [&](const std::string& hash, const char* profile) {
    Child browser =
        Start(launcher, chromium,
              {"--headless", "--no-sandbox", "--disable-gpu",
               "--user-data-dir=" + (dir / profile).string(), "--virtual-time-budget=10000",
               "--dump-dom", "http://" + http + "/#token=" + token + "&" + hash});
    EXPECT_NE(browser.process, nullptr);
    if (browser.process == nullptr) return std::string();
    EXPECT_TRUE(browser.process->WaitFor(std::chrono::seconds(90))) << "chromium did not finish";
    EXPECT_FALSE(browser.Out().empty()) << browser.process->StderrTail();
    return browser.Out();
  };

  // Opened on the study alone: the headline metric's curves, each seed's and each group's
  // median, the fraction of seeds past the threshold, and an added panel, without a click.
  const std::string first_view = page("study=browse&panels=train/loss", "chrome-first");
  EXPECT_EQ(CountMatches(first_view, R"(<path class="curve" data-cell="[0-9a-f]{16}")"), 8u)
      << first_view.substr(0, 4000);  // 4 cells, in the headline plot and the train/loss panel
  EXPECT_EQ(CountMatches(first_view, R"(<path class="median" data-group="[01]")"), 4u);
  EXPECT_EQ(CountMatches(first_view, R"(<path class="emerged" data-group="[01]")"), 2u);
  EXPECT_EQ(CountMatches(first_view, R"(class="panel" data-metric="train/loss")"), 1u);
  EXPECT_EQ(CountMatches(first_view, R"(threshold 0.5: 0.5, for a rate)"), 1u);

  // With the comparison in the link.
  const std::string dom = page(
      "study=browse&metric=train/loss&threshold=" + std::string(threshold) + "&by=arch", "chrome");
  ASSERT_FALSE(dom.empty());
  EXPECT_EQ(CountMatches(dom, R"(class="cell succeeded")"), 4u) << dom.substr(0, 2000);
  EXPECT_EQ(CountMatches(dom, R"(<path class="curve" data-cell="[0-9a-f]{16}")"), 4u);
  std::smatch m;
  std::vector<double> page_tokens;
  const std::regex t_re(R"re(<td class="t" data-tokens="([0-9.e+]+)")re");
  for (auto it = std::sregex_iterator(dom.begin(), dom.end(), t_re); it != std::sregex_iterator();
       ++it) {
    page_tokens.push_back(std::stod((*it)[1]));
  }
  ASSERT_EQ(page_tokens.size(), 2u) << "compare table rows";
  for (size_t g = 0; g < 2; ++g) {
    ASSERT_FALSE(cli["groups"][g]["median"]["tokens"].is_null());
    const double want = cli["groups"][g]["median"]["tokens"].get<double>();
    EXPECT_NEAR(page_tokens[g], want, 1e-6 * want) << "group " << g;
  }

  // The controls for studies side by side and a nuisance axis: a second study of the same grid
  // (its cells the same experiments, so they count once) and the architecture chosen per
  // positional scheme by held-out loss; the page says what the CLI chose.
  worker.process->Terminate(std::chrono::seconds(10));
  std::string second = kStudy;
  second.replace(second.find("name: browse"), 12, "name: browse2");
  std::ofstream(dir / "browse2.yaml") << second;
  Child submit2 = Start(launcher, "onset",
                        {"--coordinator", address, "--token-file", token_file, "submit",
                         (dir / "browse2.yaml").string()});
  ASSERT_TRUE(submit2.process->Wait().Succeeded()) << submit2.process->StderrTail();
  Child best = Start(launcher, "onset",
                     {"--coordinator", address, "--token-file", token_file, "compare", "browse",
                      "browse2", "--metric", "train/loss", "--threshold", threshold, "--by", "pos",
                      "--best-over", "arch", "--json"});
  ASSERT_TRUE(best.process->Wait().Succeeded()) << best.process->StderrTail();
  const nlohmann::json chose = nlohmann::json::parse(best.Out());
  ASSERT_EQ(chose["best_over"]["choices"].size(), 1u) << best.Out();
  const std::string chosen = chose["best_over"]["choices"][0]["chosen"].get<std::string>();
  const std::string pooled =
      page("study=browse&metric=train/loss&threshold=" + std::string(threshold) +
               "&by=pos&best_over=arch&with=browse2",
           "chrome-pooled");
  EXPECT_EQ(CountMatches(pooled, R"(<td class="t" data-tokens="[0-9])"), 1u)
      << pooled.substr(pooled.find("compare-table"), 3000);
  EXPECT_EQ(CountMatches(pooled,
                         "best over arch: per group the value with the lowest final "
                         "eval/heldout_loss"),
            1u);
  const std::string pos = chose["best_over"]["choices"][0]["axes"]["pos"].get<std::string>();
  EXPECT_EQ(CountMatches(pooled, "pos=" + pos + ": arch=" + chosen + "<"), 1u);
  EXPECT_EQ(CountMatches(pooled,
                         "4 cell\\(s\\) of browse2 are the same experiment as cells of "
                         "browse"),
            1u);

  daemon.process->Terminate(std::chrono::seconds(10));
  if (!::testing::Test::HasFailure()) fs::remove_all(dir);
}

}  // namespace
}  // namespace onset
