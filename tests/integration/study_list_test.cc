// Many studies, each within every documented limit of its words, against the real onsetd and
// onset: the list of studies comes in bounded pages that `onset status` follows, and a study's
// tags never grow past the limit of a study file. Skips when onsetd or onset is not built.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "cli/client/study_client.h"
#include "common/grpc_auth.h"
#include "coordinator/rpc/study_listing.h"
#include "coordinator/study/study_file.h"
#include "onset/v1/onset.grpc.pb.h"
#include "tests/integration/harness.h"

namespace onset {
namespace {

namespace v1 = ::onset::v1;
using coordinator::kMaxDescriptionLength;
using coordinator::kMaxTagLength;
using coordinator::kMaxTags;
using ::testing::HasSubstr;

constexpr char kGrid[] = R"(model: {layers: 1, d_model: 16, heads: 2, seq_len: 16}
train: {tokens: 1M, batch_tokens: 512}
eval: {niah_samples: 0}
grid: {seeds: 1}
)";

// `n` tags of the longest length, "PREFIX-N-ttt...".
std::string Tags(const std::string& prefix, int n) {
  std::string line = "tags: [";
  for (int i = 0; i < n; ++i) {
    std::string tag = prefix + "-" + std::to_string(i) + "-";
    tag += std::string(kMaxTagLength - tag.size(), 't');
    line += (i ? ", " : "") + tag;
  }
  return line + "]\n";
}

// A study file named `name` with the longest description and the most tags, each longest.
std::string AtTheLimits(const std::string& name) {
  return "name: " + name + "\ndescription: " + std::string(kMaxDescriptionLength, 'd') + "\n" +
         Tags("tag", kMaxTags) + kGrid;
}

std::string Name(int i) {
  char name[16];
  std::snprintf(name, sizeof name, "study-%03d", i);
  return name;
}

class StudyListTest : public testing::OnsetdTest {
 protected:
  StudyListTest() : OnsetdTest("onset-list") {}

  // The number of tags the database holds for `study`.
  int StoredTags(const std::string& study) {
    int n = -1;
    testing::ForEachRow(dir_ / "onset.db",
                        "SELECT COUNT(*) FROM study_tags t JOIN studies s ON s.id = t.study_id "
                        "WHERE s.name = ?",
                        {study}, [&](sqlite3_stmt* row) { n = sqlite3_column_int(row, 0); });
    return n;
  }
};

// Row 10 of the issue on operating onsetd: 700 studies within every limit made ListStudies pass
// gRPC's 4 MiB message limit, and `onset status` failed for everyone.
TEST_F(StudyListTest, SevenHundredStudiesAtTheLimitsAreListedInBoundedPages) {
  std::string missing;
  if (!testing::HaveBinaries({"onsetd", "onset"}, &missing))
    GTEST_SKIP() << missing << " not built";
  daemon_ = testing::StartDaemon(launcher_, dir_);
  ASSERT_FALSE(daemon_.address.empty());
  constexpr int kStudies = 700;
  cli::StudyClient client(daemon_.address, common::ClientSecurity{daemon_.token, ""});
  for (int i = 0; i < kStudies; ++i) {
    absl::StatusOr<v1::SubmitStudyResponse> submitted =
        client.Submit(Name(i) + ".yaml", AtTheLimits(Name(i)));
    ASSERT_TRUE(submitted.ok()) << Name(i) << ": " << submitted.status();
  }

  // The pages as a client reads them: each within the bound, together every study once.
  auto stub = v1::StudyService::NewStub(
      common::NewClientChannel(daemon_.address, common::ClientSecurity{daemon_.token, ""}));
  v1::ListStudiesRequest request;
  std::set<std::string> listed;
  int pages = 0;
  std::string sizes;  // studies and bytes of each page
  do {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    v1::ListStudiesResponse page;
    const grpc::Status status = stub->ListStudies(&context, request, &page);
    ASSERT_TRUE(status.ok()) << status.error_code() << ": " << status.error_message();
    EXPECT_LE(page.ByteSizeLong(), coordinator::kMaxStudiesReplyBytes);
    sizes += " " + std::to_string(page.studies_size()) + " (" +
             std::to_string(page.ByteSizeLong()) + " bytes)";
    for (const v1::Study& s : page.studies()) {
      EXPECT_TRUE(listed.insert(s.name()).second) << s.name() << " listed twice";
      EXPECT_EQ(s.description().size(), kMaxDescriptionLength);
      EXPECT_EQ(s.tags_size(), kMaxTags);
    }
    EXPECT_EQ(page.omitted(), kStudies - static_cast<int>(listed.size()));
    request.set_page_token(page.next_page_token());
    ++pages;
  } while (!request.page_token().empty() && pages < 100);
  EXPECT_EQ(listed.size(), static_cast<size_t>(kStudies));
  EXPECT_GE(pages, 2);

  // `onset status` follows them.
  const testing::Ran status = Onset({"status"});
  ASSERT_EQ(status.code, 0) << status.err;
  int rows = 0;
  for (size_t at = status.out.find("\nstudy-"); at != std::string::npos;
       at = status.out.find("\nstudy-", at + 1)) {
    ++rows;
  }
  EXPECT_EQ(rows, kStudies);
  EXPECT_THAT(status.out, HasSubstr("\n" + Name(kStudies - 1) + " "));
  const testing::Ran json = Onset({"status", "--json"});
  ASSERT_EQ(json.code, 0) << json.err;
  EXPECT_EQ(nlohmann::json::parse(json.out)["studies"].size(), static_cast<size_t>(kStudies));
  std::cerr << kStudies << " studies at the limits: pages of" << sizes << "\n";
}

// Row 10's second half: a study resubmitted with new tags stored them all (160 after five
// submissions of 32). Now a submission whose tags would take a study past the limit is refused,
// naming the study, its count and the limit, and the stored tags stay at most the limit.
TEST_F(StudyListTest, AResubmissionCannotTakeAStudyPastTheTagLimit) {
  std::string missing;
  if (!testing::HaveBinaries({"onsetd", "onset"}, &missing))
    GTEST_SKIP() << missing << " not built";
  daemon_ = testing::StartDaemon(launcher_, dir_);
  ASSERT_FALSE(daemon_.address.empty());
  const std::string first = (dir_ / "tagged.yaml").string();
  std::ofstream(first) << "name: tagged\n" << Tags("first", kMaxTags) << kGrid;
  ASSERT_EQ(Onset({"submit", first}).code, 0);
  ASSERT_EQ(StoredTags("tagged"), kMaxTags);
  for (int round = 0; round < 5; ++round) {
    const std::string again = (dir_ / ("again" + std::to_string(round) + ".yaml")).string();
    std::ofstream(again) << "name: tagged\n"
                         << Tags("round" + std::to_string(round), kMaxTags) << kGrid;
    for (bool dry_run : {true, false}) {
      const testing::Ran refused =
          dry_run ? Onset({"submit", "--dry-run", again}) : Onset({"submit", again});
      EXPECT_NE(refused.code, 0) << refused.out;
      EXPECT_THAT(refused.err, HasSubstr("study tagged has 32 tags and this file adds 32 more"));
      EXPECT_THAT(refused.err, HasSubstr("a study keeps at most 32 tags"));
    }
    EXPECT_EQ(StoredTags("tagged"), kMaxTags);
  }
  // The tags it has are always welcome.
  EXPECT_EQ(Onset({"submit", first}).code, 0);
  EXPECT_EQ(StoredTags("tagged"), kMaxTags);
}

}  // namespace
}  // namespace onset
