// ListStudies' pages on the real store (study_listing.h): bounded in studies and in bytes, read by
// index, leading on from one page to the next until every study was listed once, in order.
#include "coordinator/rpc/study_listing.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/fake_clock.h"
#include "coordinator/store/sqlite_store.h"
#include "coordinator/study/study_file.h"
#include "tests/coordinator/test_util.h"

namespace onset::coordinator {
namespace {

using ::testing::HasSubstr;

class StudyListingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<SqliteStore>> store =
        SqliteStore::Open(dir_.File("onset.db"), clock_);
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = std::move(*store);
  }

  // `n` studies "s000".. at the limits of a study's words: the longest description and the most
  // tags, each of the longest length.
  void AddStudies(int n) {
    absl::StatusOr<StudySpec> spec = ParseStudyFile("s.yaml", testing::kSmallStudy);
    ASSERT_TRUE(spec.ok()) << spec.status();
    for (int i = 0; i < n; ++i) {
      char name[16];
      std::snprintf(name, sizeof name, "s%03d", i);
      NewStudy study{name,
                     std::string(kMaxDescriptionLength, 'd'),
                     "s.yaml",
                     spec->source_yaml,
                     {spec->cells.front()}};
      for (int t = 0; t < kMaxTags; ++t) {
        std::string tag = std::to_string(100 + t);
        study.tags.push_back(tag + std::string(kMaxTagLength - tag.size(), 't'));
      }
      ASSERT_TRUE(store_->AddStudy(study).ok()) << name;
    }
  }

  // Every page from the first, `page_size` and `max_bytes` each; the names in the order listed.
  std::vector<std::string> AllPages(int32_t page_size, size_t max_bytes,
                                    std::vector<onset::v1::ListStudiesResponse>* pages) {
    std::vector<std::string> names;
    std::string token;
    do {
      absl::StatusOr<onset::v1::ListStudiesResponse> page =
          ListStudiesPage(*store_, page_size, token, max_bytes);
      EXPECT_TRUE(page.ok()) << page.status();
      if (!page.ok()) break;
      for (const onset::v1::Study& s : page->studies()) names.push_back(s.name());
      token = page->next_page_token();
      pages->push_back(*std::move(page));
    } while (!token.empty() && pages->size() < 1000);
    return names;
  }

  testutil::TempDir dir_;
  common::FakeClock clock_;
  std::unique_ptr<SqliteStore> store_;
};

std::vector<std::string> Names(int n) {
  std::vector<std::string> names;
  for (int i = 0; i < n; ++i) {
    char name[16];
    std::snprintf(name, sizeof name, "s%03d", i);
    names.push_back(name);
  }
  return names;
}

TEST_F(StudyListingTest, PagesStayWithinTheirByteBoundAndLeadThroughEveryStudy) {
  AddStudies(40);
  constexpr size_t kBound = 40'000;  // about five studies at the limits
  std::vector<onset::v1::ListStudiesResponse> pages;
  EXPECT_EQ(AllPages(0, kBound, &pages), Names(40));
  ASSERT_GT(pages.size(), 5u);
  int listed = 0;
  for (const onset::v1::ListStudiesResponse& page : pages) {
    EXPECT_LE(page.ByteSizeLong(), kBound);
    EXPECT_GT(page.studies_size(), 0);
    listed += page.studies_size();
    EXPECT_EQ(page.omitted(), 40 - listed);
    EXPECT_EQ(page.next_page_token().empty(), listed == 40);
  }
  // Each study as listed: its words whole.
  EXPECT_EQ(pages[0].studies(0).description().size(), kMaxDescriptionLength);
  EXPECT_EQ(pages[0].studies(0).tags_size(), kMaxTags);
}

TEST_F(StudyListingTest, APageHoldsAtMostItsSize) {
  AddStudies(7);
  std::vector<onset::v1::ListStudiesResponse> pages;
  EXPECT_EQ(AllPages(3, kMaxStudiesReplyBytes, &pages), Names(7));
  ASSERT_EQ(pages.size(), 3u);
  EXPECT_EQ(pages[0].studies_size(), 3);
  EXPECT_EQ(pages[0].omitted(), 4);
  EXPECT_EQ(pages[2].studies_size(), 1);
  EXPECT_EQ(pages[2].omitted(), 0);
  EXPECT_EQ(pages[2].next_page_token(), "");
}

// A request without paging gets every study of a small coordinator in one reply, as before.
TEST_F(StudyListingTest, ASmallListIsOnePageByDefault) {
  AddStudies(12);
  absl::StatusOr<onset::v1::ListStudiesResponse> page = ListStudiesPage(*store_, 0, "");
  ASSERT_TRUE(page.ok()) << page.status();
  EXPECT_EQ(page->studies_size(), 12);
  EXPECT_EQ(page->next_page_token(), "");
  EXPECT_EQ(page->omitted(), 0);
  EXPECT_LE(page->ByteSizeLong(), kMaxStudiesReplyBytes);
}

// A study larger than the bound (stored before the bounds on its words) is still listed, alone.
TEST_F(StudyListingTest, AStudyLargerThanTheBoundIsListedAlone) {
  AddStudies(3);
  std::vector<onset::v1::ListStudiesResponse> pages;
  EXPECT_EQ(AllPages(0, 100, &pages), Names(3));
  ASSERT_EQ(pages.size(), 3u);
  for (const onset::v1::ListStudiesResponse& page : pages) EXPECT_EQ(page.studies_size(), 1);
}

TEST_F(StudyListingTest, ABadSizeOrTokenIsRefusedNamingTheField) {
  AddStudies(1);
  for (int32_t size : {-1, kMaxStudiesPerPage + 1}) {
    absl::StatusOr<onset::v1::ListStudiesResponse> page = ListStudiesPage(*store_, size, "");
    EXPECT_EQ(page.status().code(), absl::StatusCode::kInvalidArgument) << size;
    EXPECT_THAT(std::string(page.status().message()), HasSubstr("page_size: must be 0..1000"));
  }
  for (const char* token : {"x", "0", "-3", "1x", "123456789012345678901234"}) {
    absl::StatusOr<onset::v1::ListStudiesResponse> page = ListStudiesPage(*store_, 0, token);
    EXPECT_EQ(page.status().code(), absl::StatusCode::kInvalidArgument) << token;
    EXPECT_THAT(std::string(page.status().message()), HasSubstr("page_token: not one"));
  }
  // A token past the last study: an empty last page.
  absl::StatusOr<onset::v1::ListStudiesResponse> past = ListStudiesPage(*store_, 0, "99");
  ASSERT_TRUE(past.ok()) << past.status();
  EXPECT_EQ(past->studies_size(), 0);
  EXPECT_EQ(past->next_page_token(), "");
}

// The store reads a page by the studies' index, and the listing of every study (the metrics
// page's) follows its pages.
TEST_F(StudyListingTest, TheStoreReadsAPageAndListsEveryStudyPageByPage) {
  AddStudies(5);
  absl::StatusOr<StudyListing> page = store_->ListStudyPage({0, 2});
  ASSERT_TRUE(page.ok()) << page.status();
  ASSERT_EQ(page->studies.size(), 2u);
  EXPECT_EQ(page->more, 3);
  EXPECT_EQ(page->studies[1].name, "s001");
  EXPECT_EQ(page->studies[1].source_yaml, "");  // a listing leaves the file out
  absl::StatusOr<StudyListing> next = store_->ListStudyPage({page->studies[1].row, 2});
  ASSERT_TRUE(next.ok()) << next.status();
  EXPECT_EQ(next->studies[0].name, "s002");
  EXPECT_EQ(store_->ListStudyPage({0, 0}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->ListStudyPage({0, kMaxStudiesPerRead + 1}).status().code(),
            absl::StatusCode::kInvalidArgument);
  absl::StatusOr<std::vector<StudyInfo>> all = store_->ListStudies();
  ASSERT_TRUE(all.ok()) << all.status();
  std::vector<std::string> names;
  for (const StudyInfo& s : *all) names.push_back(s.name);
  EXPECT_EQ(names, Names(5));
}

}  // namespace
}  // namespace onset::coordinator
